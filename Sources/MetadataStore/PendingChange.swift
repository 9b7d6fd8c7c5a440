import FileProviderKit
import GRDB

/// A live item's local change that the remote does not have yet: its creation, or the fields
/// changed since the remote last confirmed it. Later changes of the same item merge into the
/// same row (DESIGN §4, coalescing).
public struct PendingChange: Sendable, Hashable {
    public var inode: UInt64
    /// The journal position of the latest change merged in; it changes with every merge.
    public var sequence: Int64
    /// The item exists only here: it needs `createItem`, not `modifyItem`.
    public var isCreation: Bool
    public var fields: ItemFields
    /// Failed upload attempts since the last success, and what the last one said.
    public var attempts: Int
    public var lastError: String?
}

extension PendingChange: FetchableRecord {
    public init(row: Row) throws {
        self.inode = UInt64(row["inode"] as Int64)
        self.sequence = row["sequence"]
        self.isCreation = row["isCreation"]
        self.fields = ItemFields(rawValue: UInt32(row["fields"] as Int64))
        self.attempts = row["attempts"]
        self.lastError = row["lastError"]
    }
}
