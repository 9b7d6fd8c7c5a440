// What uploads sent without an answer (DECISIONS 307): kept per item until the item goes and its
// deletion, if one is journalled, is done, then by the remote identifier it had; also by each
// identifier a move took from it (DECISIONS 321). A later confirmed send does not end them: the
// remote may still take such a send after it (DECISIONS 319).

import FileProviderKit
import Foundation
import GRDB

extension MetadataStore {
    static func registerSentContentMigration(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v10-sent-contents") { db in
            try db.execute(
                sql: """
                    CREATE TABLE sentContent (
                      inode INTEGER NOT NULL,
                      size INTEGER NOT NULL,
                      sha256 BLOB NOT NULL,
                      PRIMARY KEY (inode, size, sha256)
                    )
                    """)
            // A deletion keeps the item's: the remote may hold one of them in place of the
            // version the deletion is based on.
            try db.execute(sql: "ALTER TABLE pendingDeletion ADD COLUMN inode INTEGER")
        }
    }

    static func registerSentContentAtMigration(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v12-sent-contents-at") { db in
            // What the sends of an item gone here left unanswered, by the remote identifier it
            // had: such a send may still land there, on another item (DECISIONS 319).
            try db.execute(
                sql: """
                    CREATE TABLE sentContentAt (
                      identifier TEXT NOT NULL,
                      size INTEGER NOT NULL,
                      sha256 BLOB NOT NULL,
                      PRIMARY KEY (identifier, size, sha256)
                    )
                    """)
        }
    }

    /// The most rows `sentContentAt` keeps, the latest: what a daemon's end leaves is a few.
    private static let sentContentsAtKept = 256

    /// Keeps what the sends of `inode` left unanswered under `identifier`, the remote's name the
    /// item had, as the item leaves it: its deletion done (DECISIONS 319), or moved on a remote
    /// whose identifiers are places, where another item may take that name (DECISIONS 321).
    static func keepSentContents(of inode: Int64, at identifier: ItemIdentifier, in db: Database) throws {
        guard !identifier.isLocal else { return }
        try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO sentContentAt (identifier, size, sha256)
                  SELECT ?, size, sha256 FROM sentContent WHERE inode = ?
                """
        ).execute(arguments: [identifier.rawValue, inode])
        try trimSentContentsAt(in: db)
    }

    /// The same for the items whose identifiers lie from `start` up to `end`, as the move of the
    /// folder above them on a remote of places gives them others (DECISIONS 321).
    static func keepSentContents(from start: String, upTo end: String, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO sentContentAt (identifier, size, sha256)
                  SELECT item.identifier, sentContent.size, sentContent.sha256
                  FROM sentContent JOIN item ON item.inode = sentContent.inode
                  WHERE item.identifier >= ? AND item.identifier < ?
                """
        ).execute(arguments: [start, end])
        try trimSentContentsAt(in: db)
    }

    private static func trimSentContentsAt(in db: Database) throws {
        try db.cachedStatement(
            sql: "DELETE FROM sentContentAt WHERE rowid <= (SELECT MAX(rowid) FROM sentContentAt) - ?"
        ).execute(arguments: [sentContentsAtKept])
    }

    /// Records that `sent` went to the remote as the contents of `inode` and no answer said so.
    /// Never from the reserve a full disk leaves for deletions (`write`): a note is worth less than
    /// the deletion that frees the disk, and on a full disk it throws `StoreDiskFull` instead.
    public func noteSentContent(_ sent: SentContent, inode: UInt64) async throws {
        do {
            try await database.write { db in try Self.insertSentContent(sent, inode: inode, in: db) }
        } catch let error as DatabaseError where Self.meansDiskFull(error) {
            throw StoreDiskFull()
        }
    }

    /// Only for an item the store holds, or one deleted here whose deletion waits: a send of a
    /// file deleted while it was under way is noted at the next start, and its deletion must know
    /// the bytes (the checker, seed 29011 on Apache; DECISIONS 319).
    private static func insertSentContent(_ sent: SentContent, inode: UInt64, in db: Database) throws {
        guard
            try Bool.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT EXISTS (SELECT 1 FROM item WHERE inode = ?1)
                          OR EXISTS (SELECT 1 FROM pendingDeletion WHERE inode = ?1)
                        """), arguments: [Int64(inode)]) == true
        else { return }
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO sentContent (inode, size, sha256) VALUES (?, ?, ?)")
            .execute(arguments: [Int64(inode), Int64(sent.size), sent.sha256])
    }

    /// The contents sent of `inode` whose answers were lost, and those of items that were
    /// `identifier` on the remote until they left it (deleted, or moved).
    public func sentContents(inode: UInt64, orAt identifier: ItemIdentifier) async throws -> [SentContent] {
        try await database.read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT size, sha256 FROM sentContent WHERE inode = ?
                        UNION SELECT size, sha256 FROM sentContentAt WHERE identifier = ?
                        """),
                arguments: [Int64(inode), identifier.rawValue]
            ).map { SentContent(size: UInt64($0[0] as Int64), sha256: $0[1]) }
        }
    }

    /// The files whose creation a daemon was sending when it ended (read before `requeueSending`).
    /// A file created empty is sent without contents, so no snapshot says what went (DECISIONS 319).
    public func fileCreationsBeingSent() async throws -> Set<UInt64> {
        try await database.read { db in
            Set(
                try Int64.fetchAll(
                    db.cachedStatement(
                        sql: """
                            SELECT pendingChange.inode FROM pendingChange JOIN item ON item.inode = pendingChange.inode
                            WHERE pendingChange.isCreation AND pendingChange.sending != 0 AND item.kind = ?
                            """), arguments: [ItemKind.file.rawValue]
                ).map(UInt64.init))
        }
    }

    /// Whether a send whose answer was lost carried `size` bytes: of `inode`'s contents, or of an
    /// item that was `identifier` on the remote until it left it (deleted, or moved).
    static func sentContent(
        ofSize size: UInt64, inode: UInt64, orAt identifier: ItemIdentifier, in db: Database
    ) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT EXISTS (SELECT 1 FROM sentContent WHERE inode = ?1 AND size = ?2)
                      OR EXISTS (SELECT 1 FROM sentContentAt WHERE identifier = ?3 AND size = ?2)
                    """),
            arguments: [Int64(inode), Int64(size), identifier.rawValue]) ?? false
    }
}
