import FileProviderKit
import Foundation
import GRDB

/// What the block cache holds of one item: which content version, in which cache file, and which
/// aligned blocks of it hold their bytes. Only blocks whose fetch ended well are recorded, and a
/// mount after a crash of the machine forgets those not yet known to be on disk (durability
/// epochs), so the cache never serves bytes that were not fetched.
public struct ContentRecord: Sendable, Hashable {
    /// Names the cache file; unique over the store's lifetime.
    public var fileNumber: Int64
    public var identifier: ItemIdentifier
    public var contentVersion: [UInt8]
    public var size: UInt64
    public var blockSize: UInt64
    /// One bit per block, least significant bit of byte 0 first.
    public var presentBlocks: [UInt8]
    public var lastUsed: Date

    public init(
        fileNumber: Int64, identifier: ItemIdentifier, contentVersion: [UInt8], size: UInt64, blockSize: UInt64,
        presentBlocks: [UInt8], lastUsed: Date
    ) {
        self.fileNumber = fileNumber
        self.identifier = identifier
        self.contentVersion = contentVersion
        self.size = size
        self.blockSize = blockSize
        self.presentBlocks = presentBlocks
        self.lastUsed = lastUsed
    }
}

extension ContentRecord: FetchableRecord {
    public init(row: Row) throws {
        self.fileNumber = row["fileNumber"]
        self.identifier = ItemIdentifier(row["identifier"] as String)
        self.contentVersion = Array(row["contentVersion"] as Data)
        self.size = UInt64(row["size"] as Int64)
        self.blockSize = UInt64(row["blockSize"] as Int64)
        self.presentBlocks = Array(row["presentBlocks"] as Data)
        self.lastUsed = Date(timeIntervalSince1970: row["lastUsed"])
    }
}
