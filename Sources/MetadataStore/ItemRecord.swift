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
    public init(row: Row) throws {
        let userInfoData: Data? = row["userInfo"]
        let userInfo = try userInfoData.map { try JSONDecoder().decode([String: String].self, from: $0) } ?? [:]
        let kindRaw: UInt8 = row["kind"]
        guard let kind = ItemKind(rawValue: kindRaw) else {
            throw DatabaseError(message: "unknown item kind \(kindRaw)")
        }
        let creation: Int64? = row["creationDate"]
        let symlinkTarget: Data? = row["symlinkTarget"]
        self.inode = UInt64(row["inode"] as Int64)
        self.item = Item(
            identifier: ItemIdentifier(row["identifier"] as String),
            parentIdentifier: ItemIdentifier(row["parentIdentifier"] as String),
            filename: Filename(bytes: Array(row["filename"] as Data)),
            kind: kind,
            size: UInt64(row["size"] as Int64),
            creationDate: creation.map { Timestamp(nanosecondsSince1970: $0) },
            contentModificationDate: Timestamp(nanosecondsSince1970: row["modificationDate"]),
            permissions: UInt16(row["permissions"] as Int64),
            capabilities: ItemCapabilities(rawValue: UInt32(row["capabilities"] as Int64)),
            version: ItemVersion(
                content: Array(row["contentVersion"] as Data), metadata: Array(row["metadataVersion"] as Data)),
            symlinkTarget: symlinkTarget.map { Array($0) },
            userInfo: userInfo
        )
    }
}

extension Item {
    /// The column values of this item, in the order of `ItemRecord.columns`.
    func databaseArguments() throws -> StatementArguments {
        let userInfoData = userInfo.isEmpty ? nil : try JSONEncoder().encode(userInfo)
        return [
            identifier.rawValue, parentIdentifier.rawValue, Data(filename.bytes), Int64(kind.rawValue),
            Int64(size), creationDate?.nanosecondsSince1970, contentModificationDate.nanosecondsSince1970,
            Int64(permissions), Int64(capabilities.rawValue), Data(version.content), Data(version.metadata),
            symlinkTarget.map { Data($0) }, userInfoData,
        ]
    }
}

extension ItemRecord {
    /// The item columns, apart from the inode.
    static let columns = [
        "identifier", "parentIdentifier", "filename", "kind", "size", "creationDate", "modificationDate",
        "permissions", "capabilities", "contentVersion", "metadataVersion", "symlinkTarget", "userInfo",
    ]
}
