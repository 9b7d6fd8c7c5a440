import Foundation
import GRDB
import GRDBSQLite

/// A BLOB column's bytes, read from the statement straight into an array: a listing's read decodes
/// four blobs per item, and through `Data` (or `Row.withUnsafeData`) each cost more than its row.
struct BlobBytes: DatabaseValueConvertible, StatementColumnConvertible {
    var bytes: [UInt8]

    init(sqliteStatement: SQLiteStatement, index: CInt) {
        // `sqlite3_column_bytes` after `sqlite3_column_blob`, as SQLite asks: the pointer stays valid.
        guard let start = sqlite3_column_blob(sqliteStatement, index) else {
            bytes = []
            return
        }
        let buffer = UnsafeRawBufferPointer(start: start, count: Int(sqlite3_column_bytes(sqliteStatement, index)))
        bytes = Array(buffer)
    }

    init(bytes: [UInt8]) { self.bytes = bytes }

    var databaseValue: DatabaseValue { Data(bytes).databaseValue }

    static func fromDatabaseValue(_ value: DatabaseValue) -> BlobBytes? {
        Data.fromDatabaseValue(value).map { BlobBytes(bytes: Array($0)) }
    }
}
