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
        self.inode = UInt64(row[0] as Int64)
        self.item = Item(
            identifier: ItemIdentifier(row[1] as String),
            parentIdentifier: ItemIdentifier(row[2] as String),
            filename: Filename(bytes: (row[3] as BlobBytes).bytes),
            kind: kind,
            size: UInt64(row[5] as Int64),
            creationDate: creation.map { Timestamp(nanosecondsSince1970: $0) },
            contentModificationDate: Timestamp(nanosecondsSince1970: row[7]),
            permissions: UInt16(row[8] as Int64),
            capabilities: ItemCapabilities(rawValue: UInt32(row[9] as Int64)),
            version: ItemVersion(content: (row[10] as BlobBytes).bytes, metadata: (row[11] as BlobBytes).bytes),
            symlinkTarget: (row[12] as BlobBytes?)?.bytes,
            userInfo: userInfo
        )
    }
}

extension Item {
    /// The column values of this item, in the order of `ItemRecord.columns`. Values, not
    /// `DatabaseValueConvertible` existentials: a listing binds 13 of them per item.
    func columnValues() throws -> [DatabaseValue] {
        let userInfoData = userInfo.isEmpty ? nil : try JSONEncoder().encode(userInfo)
        return [
            identifier.rawValue.databaseValue, parentIdentifier.rawValue.databaseValue,
            Data(filename.bytes).databaseValue, Int64(kind.rawValue).databaseValue, Int64(size).databaseValue,
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
