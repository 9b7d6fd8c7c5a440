import FileProviderKit
import Foundation
import GRDB
import GRDBSQLite

/// Runs an insert of items (`store`'s) with their column values (`Item.columnValues`) bound
/// straight through SQLite.
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
        for item in items {
            for value in try item.columnValues() {
                index += 1
                let code = bind(value, to: handle, at: index)
                guard code == SQLITE_OK else {
                    throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "cannot bind an item's value")
                }
            }
        }
        guard index == sqlite3_bind_parameter_count(handle) else {
            throw DatabaseError(
                message: "bound \(index) values to a statement of \(sqlite3_bind_parameter_count(handle))")
        }
        try statement.execute()
    }

    private static func bind(_ value: DatabaseValue, to handle: SQLiteStatement, at index: CInt) -> CInt {
        switch value.storage {
        case .null: sqlite3_bind_null(handle, index)
        case .int64(let integer): sqlite3_bind_int64(handle, index, integer)
        case .double(let double): sqlite3_bind_double(handle, index, double)
        case .string(let string): sqlite3_bind_text(handle, index, string, -1, transient)
        case .blob(let data):
            // An empty blob may have no address, which would bind NULL.
            data.isEmpty
                ? sqlite3_bind_zeroblob(handle, index, 0)
                : data.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, CInt($0.count), transient) }
        }
    }
}
