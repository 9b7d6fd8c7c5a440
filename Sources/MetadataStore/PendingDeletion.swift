import FileProviderKit
import Foundation
import GRDB

/// A deletion the remote has not seen yet. The item is gone from the store, so the row keeps what
/// `deleteItem` needs: the remote identifier and the version the deletion was based on.
public struct PendingDeletion: Sendable, Hashable {
    public var identifier: ItemIdentifier
    public var sequence: Int64
    public var kind: ItemKind
    public var baseVersion: ItemVersion
    /// Move the item to the remote's trash rather than delete it (`--trash`).
    public var toTrash: Bool
    public var attempts: Int
    public var lastError: String?
    /// Where the item was when it was deleted here, from the root: for the log (DECISIONS 242).
    /// Nil for deletions journalled before the store kept it.
    public var path: String?
    /// For an item made here whose creation was sent but never confirmed (its answer lost, the
    /// daemon killed): the folder and name it was made under. The remote may hold it there,
    /// under an identifier never learnt here, and the deletion must find it by its place
    /// (DECISIONS 284). For an item whose move was sent and never confirmed: its place here,
    /// where the remote may hold it under another identifier than the deletion's (DECISIONS 306).
    public var unconfirmedPlace: Place?
    /// The inode the item had here, whose unconfirmed sends the remote may hold (DECISIONS 307);
    /// nil for deletions journalled before the store kept it.
    public var inode: UInt64?

    /// A folder and a name in it.
    public struct Place: Sendable, Hashable {
        public var parent: ItemIdentifier
        public var filename: Filename
    }
}

extension PendingDeletion: FetchableRecord {
    public init(row: Row) throws {
        let kindRaw: UInt8 = row["kind"]
        self.identifier = ItemIdentifier(row["identifier"] as String)
        self.sequence = row["sequence"]
        self.kind = ItemKind(rawValue: kindRaw) ?? .file
        self.baseVersion = ItemVersion(
            content: Array(row["contentVersion"] as Data), metadata: Array(row["metadataVersion"] as Data))
        self.toTrash = row["toTrash"]
        self.attempts = row["attempts"]
        self.lastError = row["lastError"]
        self.path = (row["path"] as Data?).map { String(decoding: $0, as: UTF8.self) }
        self.inode = (row["inode"] as Int64?).map { UInt64($0) }
        if let parent = row["parentIdentifier"] as String?, let filename = row["filename"] as Data? {
            self.unconfirmedPlace = Place(parent: ItemIdentifier(parent), filename: Filename(bytes: Array(filename)))
        }
    }
}
