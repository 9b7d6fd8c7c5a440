import FileProviderKit

/// What a folder's listing shows of one child: the entry the kernel's readdir cache keeps, read
/// without the rest of the child's record (`MetadataStore.childEntries`).
public struct ChildEntry: Sendable {
    public let inode: UInt64
    public let filename: [UInt8]
    public let kind: ItemKind
    /// The child's identifier when it is a folder (what listing ahead asks for); nil otherwise.
    public let folderIdentifier: ItemIdentifier?
}
