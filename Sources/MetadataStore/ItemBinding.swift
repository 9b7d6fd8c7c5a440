import FileProviderKit
import Foundation
import GRDB
import GRDBSQLite

/// Runs an insert of items (`store`'s) with their column values bound straight through SQLite.
///
/// GRDB's `StatementArguments` box each value and bind it through unspecialized generic code: for
/// a listing's 13 values per item that cost as much CPU as SQLite's inserts (DECISIONS 147). The
/// statement is told its arguments are set (none, unchecked), the values are bound here, and
/// `execute()` then resets the statement, which keeps bindings, and runs it as GRDB runs any
/// other (transaction observers included).
enum ItemBinding {
    /// SQLite copies what is bound with this destructor before the bind call returns.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    static func execute(_ statement: Statement, binding items: some Sequence<Item>) throws {
        statement.setUncheckedArguments(StatementArguments())
        let handle = statement.sqliteStatement
        var index: CInt = 0
        func bound(_ code: CInt) throws {
            guard code == SQLITE_OK else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "cannot bind an item's value")
            }
        }
        func text(_ string: String) throws {
            index += 1
            try bound(sqlite3_bind_text(handle, index, string, -1, transient))
        }
        func integer(_ value: Int64?) throws {
            index += 1
            try bound(value.map { sqlite3_bind_int64(handle, index, $0) } ?? sqlite3_bind_null(handle, index))
        }
        func blob(_ bytes: [UInt8]?) throws {
            index += 1
            guard let bytes else { return try bound(sqlite3_bind_null(handle, index)) }
            // An empty array may have no address, which would bind NULL.
            guard !bytes.isEmpty else { return try bound(sqlite3_bind_zeroblob(handle, index, 0)) }
            try bound(
                bytes.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, CInt($0.count), transient) })
        }
        // In the order of `ItemRecord.columns`, as `Item.columnValues`.
        for item in items {
            try text(item.identifier.rawValue)
            try text(item.parentIdentifier.rawValue)
            try blob(item.filename.bytes)
            try integer(Int64(item.kind.rawValue))
            try integer(Int64(item.size))
            try integer(item.creationDate?.nanosecondsSince1970)
            try integer(item.contentModificationDate.nanosecondsSince1970)
            try integer(Int64(item.permissions))
            try integer(Int64(item.capabilities.rawValue))
            try blob(item.version.content)
            try blob(item.version.metadata)
            try blob(item.symlinkTarget)
            try blob(item.userInfo.isEmpty ? nil : Array(try JSONEncoder().encode(item.userInfo)))
        }
        guard index == sqlite3_bind_parameter_count(handle) else {
            throw DatabaseError(
                message: "bound \(index) values to a statement of \(sqlite3_bind_parameter_count(handle))")
        }
        try statement.execute()
    }
}
