import FileProviderKit

/// What an item took from the remote's answer to a write of it (`completeCreation`,
/// `completeModification`, `reidentify`): its identifier and version, and what only the remote
/// decides. A record kept in memory for the kernel takes exactly the same (`apply`), so that it
/// stays equal to the stored one, which a later remote change is checked against (DECISIONS 274).
public struct RemoteIdentity: Sendable, Hashable {
    public var identifier: ItemIdentifier
    public var version: ItemVersion
    public var creationDate: Timestamp?
    public var capabilities: ItemCapabilities
    public var userInfo: [String: String]
    /// The remote's modification time, when it replaced the one made here; nil: kept.
    public var modificationDate: Timestamp?

    public func apply(to item: inout Item) {
        item.identifier = identifier
        item.version = version
        item.creationDate = creationDate
        item.capabilities = capabilities
        item.userInfo = userInfo
        if let modificationDate { item.contentModificationDate = modificationDate }
    }
}
