import FileProviderKit
import Foundation
import GRDB

/// An item as the store keeps it: the provider's metadata and the inode number the engine gave it.
/// The inode is assigned once per identifier and never reused, so it is stable across remounts.
public struct ItemRecord: Sendable, Hashable {
    public var inode: UInt64
    public var item: Item

    public init(inode: UInt64, item: Item) {
        self.inode = inode
        self.item = item
    }

    public var identifier: ItemIdentifier { item.identifier }
}

extension ItemRecord: FetchableRecord {
    /// Decodes a row whose first columns are the item table's, in table order (`SELECT *` or
    /// `SELECT item.*, …`). By position, not by name: a named lookup lowercases and compares
    /// every column name, which made decoding the hottest code of a busy store.
    public init(row: Row) throws {
        let userInfoData: Data? = row[13]
        let userInfo = try userInfoData.map { try JSONDecoder().decode([String: String].self, from: $0) } ?? [:]
        let kindRaw: UInt8 = row[4]
        guard let kind = ItemKind(rawValue: kindRaw) else {
            throw DatabaseError(message: "unknown item kind \(kindRaw)")
        }
        let creation: Int64? = row[6]
        /// A column's integer as the type the item holds; a row no build writes throws, not traps.
        func integer<T: FixedWidthInteger>(_ column: Int, as type: T.Type) throws -> T {
            let value: Int64 = row[column]
            guard let exact = T(exactly: value) else {
                throw DatabaseError(message: "item column \(ItemRecord.columns[column - 1]) holds \(value)")
            }
            return exact
        }
        self.inode = try integer(0, as: UInt64.self)
        self.item = Item(
            identifier: ItemIdentifier(row[1] as String),
            parentIdentifier: ItemIdentifier(row[2] as String),
            filename: Filename(bytes: (row[3] as BlobBytes).bytes),
            kind: kind,
            size: try integer(5, as: UInt64.self),
            creationDate: creation.map { Timestamp(nanosecondsSince1970: $0) },
            contentModificationDate: Timestamp(nanosecondsSince1970: row[7]),
            permissions: try integer(8, as: UInt16.self),
            capabilities: ItemCapabilities(rawValue: try integer(9, as: UInt32.self)),
            version: ItemVersion(content: (row[10] as BlobBytes).bytes, metadata: (row[11] as BlobBytes).bytes),
            symlinkTarget: (row[12] as BlobBytes?)?.bytes,
            userInfo: userInfo
        )
    }
}

extension Item {
    /// The column values of this item, in the order of `ItemRecord.columns`. Values, not
    /// `DatabaseValueConvertible` existentials: a listing binds 13 of them per item.
    /// Throws for a size beyond `Item.maximumSize`: the engine refuses such items before they get
    /// here (DECISIONS 180), and the column is an Int64.
    func columnValues() throws -> [DatabaseValue] {
        guard let size = Int64(exactly: size) else { throw DatabaseError(message: "item size \(size) is too large") }
        let userInfoData = userInfo.isEmpty ? nil : try JSONEncoder().encode(userInfo)
        return [
            identifier.rawValue.databaseValue, parentIdentifier.rawValue.databaseValue,
            Data(filename.bytes).databaseValue, Int64(kind.rawValue).databaseValue, size.databaseValue,
            creationDate?.nanosecondsSince1970.databaseValue ?? .null,
            contentModificationDate.nanosecondsSince1970.databaseValue, Int64(permissions).databaseValue,
            Int64(capabilities.rawValue).databaseValue, Data(version.content).databaseValue,
            Data(version.metadata).databaseValue, symlinkTarget.map { Data($0) }?.databaseValue ?? .null,
            userInfoData?.databaseValue ?? .null,
        ]
    }

    /// `columnValues` as a statement's arguments.
    func databaseArguments() throws -> StatementArguments { StatementArguments(values: try columnValues()) }
}

extension StatementArguments {
    /// Positional arguments, for the writes of one item (`upsert`, `update`). GRDB's initializer
    /// for values of one concrete type reads each through a key path, unspecialized, which cost
    /// more than binding the values (DECISIONS 145).
    init(values: [DatabaseValue]) {
        self.init(values.map { $0 as (any DatabaseValueConvertible)? })
    }
}

extension ItemRecord {
    /// The item columns, apart from the inode, in table order (`init(row:)` relies on it).
    static let columns = [
        "identifier", "parentIdentifier", "filename", "kind", "size", "creationDate", "modificationDate",
        "permissions", "capabilities", "contentVersion", "metadataVersion", "symlinkTarget", "userInfo",
    ]
}
