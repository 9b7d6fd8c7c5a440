import FileProviderKit
import GRDB

/// A live item's local change that the remote does not have yet: its creation, or the fields
/// changed since the remote last confirmed it. Later changes of the same item merge into the
/// same row (ARCHITECTURE §4, coalescing).
public struct PendingChange: Sendable, Hashable {
    public var inode: UInt64
    /// The journal position of the latest change merged in; it changes with every merge.
    public var sequence: Int64
    /// The item exists only here: it needs `createItem`, not `modifyItem`.
    public var isCreation: Bool
    public var fields: ItemFields
    /// The fields of a send under way (taken from `fields` when it began).
    public var sending: ItemFields
    /// Failed upload attempts since the last success, and what the last one said.
    public var attempts: Int
    public var lastError: String?
    /// Whether a send of the item went to a place it has left since, its answer lost: the remote
    /// may hold it there until the next attempt finds it and moves it (DECISIONS 322). Read with
    /// the journal's head (`pendingWork`); false where a change is read alone.
    public var leftASentPlace = false
}

extension PendingChange: FetchableRecord {
    /// Decodes a `SELECT * FROM pendingChange` row.
    public init(row: Row) throws { self.init(row: row, from: 0) }

    /// Decodes the pendingChange columns, in table order, starting at column `start` (after the
    /// item's in `SELECT item.*, pendingChange.*`). By position, as `ItemRecord.init(row:)`: the
    /// uploader decodes a window of the journal after every send.
    init(row: Row, from start: Int) {
        self.inode = UInt64(row[start] as Int64)
        self.sequence = row[start + 1]
        self.isCreation = row[start + 2]
        self.fields = ItemFields(rawValue: UInt32(row[start + 3] as Int64))
        self.sending = ItemFields(rawValue: UInt32(row[start + 4] as Int64))
        self.attempts = row[start + 5]
        self.lastError = row[start + 6]
    }

    /// Decodes a `SELECT item.*, pendingChange.*` row's change.
    init(joinedRow row: Row) { self.init(row: row, from: 1 + ItemRecord.columns.count) }
}
