import Foundation

/// Options of `createItem` (NSFileProviderCreateItemOptions).
public struct CreateItemOptions: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The item may already exist remotely (a replay after a crash): succeed and return it.
    public static let mayAlreadyExist = CreateItemOptions(rawValue: 1 << 0)
}

/// Options of `modifyItem` (NSFileProviderModifyItemOptions).
public struct ModifyItemOptions: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The change may already have been applied remotely (a replay after a crash).
    public static let mayAlreadyExist = ModifyItemOptions(rawValue: 1 << 0)
}

/// Options of `deleteItem` (NSFileProviderDeleteItemOptions).
public struct DeleteItemOptions: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Delete a directory with everything in it; without it a non-empty directory is refused with
    /// `directoryNotEmpty`.
    public static let recursive = DeleteItemOptions(rawValue: 1 << 0)
    /// Move the item into the remote's trash instead of deleting it (where `ProviderFeatures`
    /// has `.trash`; elsewhere `featureUnsupported`).
    public static let toTrash = DeleteItemOptions(rawValue: 1 << 1)
}

/// A remote, as the engine sees it (NSFileProviderReplicatedExtension).
///
/// The read half — `item(for:)`, `enumerator(for:)`, `fetchContents` — is all a read-only mount
/// needs. The write half replays local changes: each call carries the version the change was based
/// on, and a provider whose remote no longer holds that version throws `ProviderError.conflict`
/// rather than overwrite.
///
/// Settled points of the contract:
/// - A conflict is decided on the **content** part of the base version; metadata is last writer
///   wins (a remote chmod must not turn a local edit into a conflict copy).
/// - A directory's version may change when its children change; the engine does not use
///   directory versions to detect conflicts.
/// - `deleteItem` of an identifier the remote does not know throws `noSuchItem`; the engine takes
///   that as done (a replay after a crash).
/// - Changing a symlink's target may throw `featureUnsupported` (POSIX cannot do it in place);
///   the engine then deletes and creates.
/// - A cancelled call throws `CancellationError`, not a `ProviderError`.
public protocol FileProvider: Sendable {
    /// The latest metadata of an item.
    func item(for identifier: ItemIdentifier) async throws -> Item

    /// An enumerator for a directory, or for `.workingSet`.
    func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator

    /// Writes the whole content of `version` (the current one when nil) into `sink`, and returns
    /// the item as of the content written. With a version that is gone it throws
    /// `versionNoLongerAvailable`, or returns the newer item and its content.
    func fetchContents(for identifier: ItemIdentifier, version: ItemVersion?, into sink: any ContentSink)
        async throws -> Item

    /// Creates an item like `template` (its identifier is the engine's local one and is ignored)
    /// with the given fields, and for files the content of `contents`. Returns the item as the
    /// remote now has it, with the remote's identifier. An existing name throws `filenameCollision`.
    func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
        async throws -> Item

    /// Applies `changedFields` of `item` (a rename, a move, new metadata, new content from
    /// `contents`), provided the remote still holds `baseVersion`; otherwise throws `conflict`.
    func modifyItem(
        _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?, options: ModifyItemOptions
    ) async throws -> Item

    /// Deletes an item, provided the remote still holds `baseVersion` (nil: any version).
    func deleteItem(identifier: ItemIdentifier, baseVersion: ItemVersion?, options: DeleteItemOptions) async throws

    /// Called once before the engine lets go of the provider: close connections, save state.
    func invalidate() async
}
