import FileProviderKit
import GRDB

extension MetadataStore {
    /// The folder `inode`'s entries changed here (made, removed, renamed): its modification time
    /// becomes `time`, unless it is later already. Not journalled: the remote moves its own
    /// folder's time when the changes reach it, and a remote change brings that time back.
    public func noteEntriesChanged(inFolder inode: UInt64, at time: Timestamp) async throws {
        try await write { db in
            try db.cachedStatement(sql: "UPDATE item SET modificationDate = ? WHERE inode = ? AND modificationDate < ?")
                .execute(arguments: [time.nanosecondsSince1970, Int64(inode), time.nanosecondsSince1970])
        }
    }
}
