/// Every error a provider may throw (NSFileProviderError, plus `conflict`). The engine maps each to
/// one errno in a single table; anything else a provider throws counts as `cannotSynchronize`.
public enum ProviderError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The item does not exist (any more) on the remote.
    case noSuchItem(ItemIdentifier?)
    /// The remote cannot be reached now; retrying later may work.
    case serverUnreachable(reason: String)
    /// The credentials were refused.
    case notAuthenticated(reason: String)
    /// The remote is out of space for this account.
    case insufficientQuota
    /// Anything else that stops this item from syncing; `reason` says what, for the log.
    case cannotSynchronize(reason: String)
    /// The target name is taken in the target directory.
    case filenameCollision(existing: ItemIdentifier?)
    /// A directory to delete still has children.
    case directoryNotEmpty
    /// The remote refuses to delete the item.
    case deletionRejected
    /// The item is deliberately not synchronised.
    case excludedFromSync
    /// The remote does not do this.
    case featureUnsupported
    /// The version asked for is gone.
    case versionNoLongerAvailable
    /// The page handed back is no longer valid: restart the listing.
    case pageExpired
    /// The anchor handed back is no longer valid: re-enumerate everything.
    case syncAnchorExpired
    /// The remote no longer holds the base version of a change; `remote` is its item now, when known.
    case conflict(remote: Item?)

    public var description: String {
        switch self {
        case .noSuchItem(let id): "no such item\(id.map { " \($0)" } ?? "")"
        case .serverUnreachable(let reason): "server unreachable: \(reason)"
        case .notAuthenticated(let reason): "not authenticated: \(reason)"
        case .insufficientQuota: "insufficient quota"
        case .cannotSynchronize(let reason): "cannot synchronize: \(reason)"
        case .filenameCollision: "filename collision"
        case .directoryNotEmpty: "directory not empty"
        case .deletionRejected: "deletion rejected"
        case .excludedFromSync: "excluded from sync"
        case .featureUnsupported: "feature unsupported"
        case .versionNoLongerAvailable: "version no longer available"
        case .pageExpired: "page expired"
        case .syncAnchorExpired: "sync anchor expired"
        case .conflict: "conflict with a newer remote version"
        }
    }
}
