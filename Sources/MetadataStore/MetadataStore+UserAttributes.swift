// Users' own extended attributes (`user.*` outside `user.fpfs.*`), kept in the store so that
// `cp -a`, `rsync -aX` and desktop tools that tag files keep working on any remote.

import Foundation
import GRDB

extension MetadataStore {
    public func userAttribute(inode: UInt64, name: String) async throws -> [UInt8]? {
        try await writer.read { db in
            try Data.fetchOne(
                db, sql: "SELECT value FROM userAttribute WHERE inode = ? AND name = ?",
                arguments: [Int64(inode), name]
            ).map { Array($0) }
        }
    }

    public func userAttributeNames(inode: UInt64) async throws -> [String] {
        try await writer.read { db in
            try String.fetchAll(
                db, sql: "SELECT name FROM userAttribute WHERE inode = ? ORDER BY name", arguments: [Int64(inode)])
        }
    }

    /// Sets `name` to `value`; with `mustExist` (XATTR_REPLACE) or `mustBeNew` (XATTR_CREATE)
    /// returns false, changing nothing, when the attribute is absent or present.
    public func setUserAttribute(
        inode: UInt64, name: String, value: [UInt8], mustExist: Bool, mustBeNew: Bool
    ) async throws -> Bool {
        try await writer.write { db in
            let exists =
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM userAttribute WHERE inode = ? AND name = ?",
                    arguments: [Int64(inode), name])
                ?? false
            if (mustExist && !exists) || (mustBeNew && exists) { return false }
            try db.execute(
                sql: "INSERT OR REPLACE INTO userAttribute (inode, name, value) VALUES (?, ?, ?)",
                arguments: [Int64(inode), name, Data(value)])
            return true
        }
    }

    /// Removes `name`; false when it was not there.
    public func removeUserAttribute(inode: UInt64, name: String) async throws -> Bool {
        try await writer.write { db in
            try db.execute(
                sql: "DELETE FROM userAttribute WHERE inode = ? AND name = ?", arguments: [Int64(inode), name])
            return db.changesCount > 0
        }
    }
}
