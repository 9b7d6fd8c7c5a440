// Users' own extended attributes (`user.*` outside `user.fpfs.*`), kept in the store so that
// `cp -a`, `rsync -aX` and desktop tools that tag files keep working on any remote. A change is
// journalled like other metadata (the whole set, `ItemFields.extendedAttributes`), and remotes
// that hold them (WebDAV dead properties) get them; the root's stay on this machine, since the
// root is never sent.

import FileProviderKit
import Foundation
import GRDB

extension MetadataStore {
    public func userAttribute(inode: UInt64, name: String) async throws -> [UInt8]? {
        try await database.read { db in
            try Data.fetchOne(
                db.cachedStatement(sql: "SELECT value FROM userAttribute WHERE inode = ? AND name = ?"),
                arguments: [Int64(inode), name]
            ).map { Array($0) }
        }
    }

    public func userAttributeNames(inode: UInt64) async throws -> [String] {
        try await database.read { db in
            try String.fetchAll(
                db.cachedStatement(sql: "SELECT name FROM userAttribute WHERE inode = ? ORDER BY name"),
                arguments: [Int64(inode)])
        }
    }

    /// Every user attribute of an item, as the uploader sends them.
    public func userAttributes(inode: UInt64) async throws -> [String: [UInt8]] {
        try await database.read { db in
            var attributes: [String: [UInt8]] = [:]
            for row in try Row.fetchAll(
                db.cachedStatement(sql: "SELECT name, value FROM userAttribute WHERE inode = ?"),
                arguments: [Int64(inode)])
            {
                attributes[row["name"]] = Array(row["value"] as Data)
            }
            return attributes
        }
    }

    /// Sets `name` to `value` and journals the change; with `mustExist` (XATTR_REPLACE) or
    /// `mustBeNew` (XATTR_CREATE) returns false, changing nothing, when the attribute is absent or
    /// present.
    public func setUserAttribute(
        inode: UInt64, name: String, value: [UInt8], mustExist: Bool, mustBeNew: Bool
    ) async throws -> Bool {
        try await write { db in
            let exists =
                try Bool.fetchOne(
                    db.cachedStatement(sql: "SELECT 1 FROM userAttribute WHERE inode = ? AND name = ?"),
                    arguments: [Int64(inode), name])
                ?? false
            if (mustExist && !exists) || (mustBeNew && exists) { return false }
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO userAttribute (inode, name, value) VALUES (?, ?, ?)")
                .execute(arguments: [Int64(inode), name, Data(value)])
            try Self.journalAttributes(of: inode, in: db)
            return true
        }
    }

    /// Removes `name` and journals the change; false when it was not there.
    public func removeUserAttribute(inode: UInt64, name: String) async throws -> Bool {
        try await write { db in
            try db.cachedStatement(sql: "DELETE FROM userAttribute WHERE inode = ? AND name = ?").execute(arguments: [
                Int64(inode), name,
            ])
            guard db.changesCount > 0 else { return false }
            try Self.journalAttributes(of: inode, in: db)
            return true
        }
    }

    private static func journalAttributes(of inode: UInt64, in db: Database) throws {
        guard inode != 1 else { return }  // the root (saveRoot)
        try journal(.extendedAttributes, inode: inode, in: db)
    }

    /// Takes the attributes the remote lists for an item, unless a local change of them waits to
    /// be sent: that one is newer.
    static func adoptRemoteAttributes(_ attributes: [String: [UInt8]], inode: UInt64, in db: Database) throws {
        let pending =
            try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT (fields | sending) & ? FROM pendingChange WHERE inode = ?"),
                arguments: [Int64(ItemFields.extendedAttributes.rawValue), Int64(inode)]) ?? 0
        guard pending == 0 else { return }
        try db.cachedStatement(sql: "DELETE FROM userAttribute WHERE inode = ?").execute(arguments: [Int64(inode)])
        for (name, value) in attributes {
            try db.cachedStatement(sql: "INSERT INTO userAttribute (inode, name, value) VALUES (?, ?, ?)").execute(
                arguments: [Int64(inode), name, Data(value)])
        }
    }
}
