// Pins and the bookkeeping of the bounded cache (ARCHITECTURE §5).
//
// A pin is a row per inode. The writes that store or move an item pin it when its folder is pinned,
// whoever stores it (a listing, a local creation, a change from the remote). So "pinned" is a
// plain lookup, never a walk up the tree.

import FileProviderKit
import Foundation
import GRDB

extension MetadataStore {
    static func registerCacheMigration(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v3-cache") { db in
            // v5 drops the two triggers that pin new and moved items (DECISIONS 144).
            let underPinnedParent = """
                EXISTS (SELECT 1 FROM pinned JOIN item AS parent ON parent.inode = pinned.inode
                        WHERE parent.identifier = NEW.parentIdentifier AND parent.inode != NEW.inode)
                """
            try db.execute(
                sql: """
                    CREATE TABLE pinned (inode INTEGER PRIMARY KEY);
                    CREATE TRIGGER pinned_inherited_by_new_items AFTER INSERT ON item
                    WHEN \(underPinnedParent)
                    BEGIN INSERT OR IGNORE INTO pinned (inode) VALUES (NEW.inode); END;
                    CREATE TRIGGER pinned_inherited_by_moved_items AFTER UPDATE OF parentIdentifier ON item
                    WHEN \(underPinnedParent)
                    BEGIN INSERT OR IGNORE INTO pinned (inode) VALUES (NEW.inode); END;
                    CREATE TRIGGER pinned_forgotten_with_items AFTER DELETE ON item
                    BEGIN DELETE FROM pinned WHERE inode = OLD.inode; END;
                    """)
        }
    }

    static func registerPinInheritanceMigration(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v5-pins-inherited-by-writes") { db in
            // A row trigger ran for every item stored, pinned or not, and cost a listing about a
            // third of its inserts (DECISIONS 144): `inheritPin` does its work in the writes.
            try db.execute(
                sql: """
                    DROP TRIGGER pinned_inherited_by_new_items;
                    DROP TRIGGER pinned_inherited_by_moved_items;
                    """)
        }
    }

    /// Whether anything is pinned: when nothing is, as is usual, storing an item skips `inheritPin`.
    static func anythingPinned(in db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM pinned)")) ?? false
    }

    /// Pins the item `identifier` if its folder is pinned: called by every write that stores an
    /// item or moves one, so that a pinned folder's pin reaches what is listed in it later, what is
    /// made in it and what moves into it.
    static func inheritPin(_ identifier: ItemIdentifier, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO pinned (inode)
                SELECT child.inode FROM item AS child
                JOIN item AS parent ON parent.identifier = child.parentIdentifier AND parent.inode != child.inode
                JOIN pinned ON pinned.inode = parent.inode
                WHERE child.identifier = ?
                """
        ).execute(arguments: [identifier.rawValue])
    }

    /// The inode and every item below it that the store knows (a recursive walk of parents).
    private static let subtree = """
        WITH RECURSIVE tree(inode, identifier, path) AS (
          SELECT inode, identifier, CAST('' AS BLOB) FROM item WHERE inode = ?
          UNION ALL
          SELECT item.inode, item.identifier,
                 CASE WHEN tree.path = CAST('' AS BLOB) THEN item.filename
                      ELSE tree.path || CAST('/' AS BLOB) || item.filename END
          FROM item JOIN tree ON item.parentIdentifier = tree.identifier AND item.inode != tree.inode)
        """

    // MARK: Pins

    /// Pins `inode` and every item below it the store knows; items stored below it later are
    /// pinned as they arrive.
    public func pin(inode: UInt64) async throws {
        try await write { db in
            try db.cachedStatement(sql: Self.subtree + " INSERT OR IGNORE INTO pinned (inode) SELECT inode FROM tree")
                .execute(arguments: [Int64(inode)])
        }
    }

    /// Unpins `inode` and everything below it.
    public func unpin(inode: UInt64) async throws {
        try await write { db in
            try db.cachedStatement(sql: Self.subtree + " DELETE FROM pinned WHERE inode IN (SELECT inode FROM tree)")
                .execute(arguments: [Int64(inode)])
        }
    }

    public func isPinned(inode: UInt64) async throws -> Bool {
        try await database.read { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM pinned WHERE inode = ?)"),
                arguments: [Int64(inode)]) ?? false
        }
    }

    /// The identifiers of every pinned item (what eviction must keep).
    public func pinnedIdentifiers() async throws -> Set<ItemIdentifier> {
        try await database.read { db in
            let identifiers = try String.fetchAll(
                db.cachedStatement(sql: "SELECT item.identifier FROM pinned JOIN item USING (inode)"))
            return Set(identifiers.map { ItemIdentifier($0) })
        }
    }

    /// The bytes of the pinned files the store knows (what pins keep on this machine).
    public func pinnedBytes() async throws -> UInt64 {
        try await database.read { db in
            let total = try Int64.fetchOne(
                db.cachedStatement(
                    sql: "SELECT COALESCE(SUM(item.size), 0) FROM pinned JOIN item USING (inode) WHERE item.kind = ?"),
                arguments: [Int64(ItemKind.file.rawValue)])
            return UInt64(total ?? 0)
        }
    }

    /// Pinned items whose parent is not pinned: where the downloads of pins start again.
    public func pinnedRoots() async throws -> [UInt64] {
        try await database.read { db in
            try Int64.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT item.inode FROM pinned JOIN item USING (inode)
                        WHERE item.inode = 1 OR NOT EXISTS (
                          SELECT 1 FROM pinned AS p JOIN item AS parent ON parent.inode = p.inode
                          WHERE parent.identifier = item.parentIdentifier)
                        """
                )
            ).map(UInt64.init)
        }
    }

    /// `inode` and every item below it that the store knows, each with its path relative to
    /// `inode` (empty for `inode` itself, bytes joined with `/`).
    public func subtree(of inode: UInt64) async throws -> [(record: ItemRecord, path: [UInt8])] {
        try await database.read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: Self.subtree
                        + " SELECT item.*, tree.path AS treePath FROM tree JOIN item USING (inode) ORDER BY tree.path"),
                arguments: [Int64(inode)]
            ).map { row in (try ItemRecord(row: row), Array(row["treePath"] as Data? ?? Data())) }
        }
    }

    // MARK: Clean local copies

    /// Files whose content lives in the local folder and has nothing left to send: eviction may
    /// delete these copies, since the remote has the same bytes.
    public func cleanLocalContents() async throws -> [ItemRecord] {
        try await database.read { db in
            try ItemRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT item.* FROM localContent JOIN item USING (inode)
                        WHERE NOT EXISTS (SELECT 1 FROM pendingChange WHERE pendingChange.inode = localContent.inode)
                        """))
        }
    }

    /// Forgets that `inode`'s content is local, unless a change of it waits to be sent; true when
    /// forgotten.
    public func forgetCleanLocalContent(inode: UInt64) async throws -> Bool {
        try await write { db in
            try db.cachedStatement(
                sql: """
                    DELETE FROM localContent WHERE inode = ?
                    AND NOT EXISTS (SELECT 1 FROM pendingChange WHERE pendingChange.inode = localContent.inode)
                    """
            ).execute(arguments: [Int64(inode)])
            return db.changesCount > 0
        }
    }

    // MARK: Use of cached contents

    /// Records when cache files were last used, so that the order of eviction survives a remount.
    public func saveLastUsed(_ times: [Int64: Date]) async throws {
        guard !times.isEmpty else { return }
        try await write { db in
            for (fileNumber, time) in times {
                try db.cachedStatement(sql: "UPDATE content SET lastUsed = ? WHERE fileNumber = ?").execute(arguments: [
                    time.timeIntervalSince1970, fileNumber,
                ])
            }
        }
    }
}
