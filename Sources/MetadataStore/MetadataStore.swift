// MetadataStore: the engine's durable memory, in SQLite through GRDB.
//
// It holds every item the engine has seen (with the inode number given to it), which directories
// have been listed completely, which blocks of which content versions the cache holds, and small
// settings such as the remote the cache belongs to. A WAL-mode DatabasePool lets lookups read
// while a listing writes. Every method is async and runs on GRDB's own queues, never blocking a
// cooperative thread, except the `…Now` reads, which the FUSE session thread makes on a
// connection of its own and which never wait for a lock. Every statement is a cached one
// (prepared once per connection): preparing anew cost more than running it (DECISIONS 82).

import FileProviderKit
import Foundation
import GRDB
import GRDBSQLite

/// The SQLite store of one mount's metadata.
public final class MetadataStore: Sendable {
    /// The database; writes go through `write`, which knows what to do on a full disk.
    let database: any DatabaseWriter
    let itemChanges = ItemChangeCounter()
    /// What the uploader's writes changed on the remote, for the change rounds (`ownWritesMark`).
    let ownWrites = OwnWriteLedger()
    /// The FUSE session thread's own read connection (`childNow`, `recordNow`): a read there
    /// neither waits for one of the pool's readers nor hops to another thread. For a store in
    /// memory, its one connection.
    private let sessionReader: any DatabaseReader
    /// Room kept on the store's disk for its writes; nil in memory.
    private let reserve: SpaceReserve?

    /// Moves whenever a committed transaction added, changed or removed items; read it before
    /// reading items to know later whether they may have changed since.
    public var itemGeneration: UInt64 { itemChanges.count }

    /// The item generation now, if nothing committed since `generation` added, removed or changed
    /// a child of the folder at `inode` (only other folders' listings were stored); nil when
    /// something may have, or when the store no longer remembers.
    public func itemGeneration(unchangedUnder inode: UInt64, since generation: UInt64) -> UInt64? {
        itemChanges.unchangedChildren(of: inode, since: generation)
    }

    /// A mark for a change round about to ask the remote: `applyRemoteChanges(since:)` leaves alone
    /// the items this mount's uploads changed after it (see `OwnWriteLedger`). One round at a time.
    public func ownWritesMark() -> UInt64 { ownWrites.mark() }

    /// The change round that took marks ended.
    public func ownWritesRoundEnded() { ownWrites.roundEnded() }

    /// Opens (creating if needed) the store in `file`.
    public init(file: URL) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        // In WAL mode, NORMAL syncs at checkpoints rather than at every commit: a commit is still
        // safe from a killed daemon (the durability contract), and only a power cut may lose the
        // last ones. FULL made every write-type operation wait for a disk flush.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        var disk = statvfs()
        let folder = file.deletingLastPathComponent()
        let capacity = statvfs(folder.path, &disk) == 0 ? Int64(disk.f_blocks) * Int64(disk.f_frsize) : 0
        self.reserve = SpaceReserve(
            path: folder.appendingPathComponent("space-reserve").path, size: SpaceReserve.size(forDiskOf: capacity))
        self.database = try DatabasePool(path: file.path, configuration: configuration)
        try Self.migrator.migrate(database)
        database.add(transactionObserver: itemChanges, extent: .databaseLifetime)
        var readOnly = configuration
        readOnly.readonly = true
        // A busy database fails the read at once (the request then goes to a task) rather than
        // holding up every request the session thread has yet to read.
        readOnly.busyMode = .immediateError
        self.sessionReader = try DatabaseQueue(path: file.path, configuration: readOnly)
    }

    /// A store that lives in memory only, for tests.
    public init() throws {
        self.reserve = nil
        let database = try DatabaseQueue()
        self.database = database
        self.sessionReader = database
        try Self.migrator.migrate(database)
        database.add(transactionObserver: itemChanges, extent: .databaseLifetime)
    }

    /// Runs `updates` in a write transaction. When the disk is full the store's reserve gives up
    /// a slice and the transaction is tried again, until it succeeds or the reserve is spent, so
    /// that the journal still takes the deletions that free the disk (SpaceReserve); the reserve is
    /// taken back once there is room. With the reserve spent, throws `StoreDiskFull`.
    func write<T: Sendable>(_ updates: @Sendable (Database) throws -> T) async throws -> T {
        do {
            let result = try await database.write(updates)
            if let reserve, reserve.isDue { try? await BlockingIO.run { reserve.takeIfRoom() } }
            return result
        } catch let error as DatabaseError where Self.meansDiskFull(error) {
            while let reserve, reserve.release() {
                do {
                    return try await database.write(updates)
                } catch let error as DatabaseError where Self.meansDiskFull(error) {
                    continue
                }
            }
            throw StoreDiskFull()
        }
    }

    /// SQLite found no room: the database or its log could not grow, or the shared-memory file.
    static func meansDiskFull(_ error: DatabaseError) -> Bool {
        error.resultCode == .SQLITE_FULL || error.extendedResultCode == .SQLITE_IOERR_SHMSIZE
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // AUTOINCREMENT so that an inode number is never handed out twice.
            try db.execute(
                sql: """
                    CREATE TABLE item (
                      inode INTEGER PRIMARY KEY AUTOINCREMENT,
                      identifier TEXT NOT NULL UNIQUE,
                      parentIdentifier TEXT NOT NULL,
                      filename BLOB NOT NULL,
                      kind INTEGER NOT NULL,
                      size INTEGER NOT NULL,
                      creationDate INTEGER, -- nanoseconds since 1970, exact (Timestamp)
                      modificationDate INTEGER NOT NULL,
                      permissions INTEGER NOT NULL,
                      capabilities INTEGER NOT NULL,
                      contentVersion BLOB NOT NULL,
                      metadataVersion BLOB NOT NULL,
                      symlinkTarget BLOB,
                      userInfo BLOB
                    );
                    CREATE INDEX item_by_parent_and_name ON item(parentIdentifier, filename);
                    CREATE TABLE directory (
                      identifier TEXT PRIMARY KEY,
                      isComplete INTEGER NOT NULL -- a ListingState
                    );
                    CREATE TABLE content (
                      fileNumber INTEGER PRIMARY KEY AUTOINCREMENT,
                      identifier TEXT NOT NULL UNIQUE,
                      contentVersion BLOB NOT NULL,
                      size INTEGER NOT NULL,
                      blockSize INTEGER NOT NULL,
                      presentBlocks BLOB NOT NULL,
                      lastUsed REAL NOT NULL
                    );
                    CREATE TABLE setting (
                      key TEXT PRIMARY KEY,
                      value TEXT NOT NULL
                    );
                    """)
        }
        migrator.registerMigration("v2-journal") { db in
            // The journal of local changes the remote does not have yet (ARCHITECTURE §4). A live item
            // has at most one pending change, whose fields accumulate; a deleted item keeps only
            // what its deletion needs. `sequence` orders all of them; every change takes the next
            // number from journalClock, so an uploader can tell whether a row changed under it.
            try db.execute(
                sql: """
                    CREATE TABLE pendingChange (
                      inode INTEGER PRIMARY KEY,
                      sequence INTEGER NOT NULL,
                      isCreation INTEGER NOT NULL,
                      fields INTEGER NOT NULL,
                      sending INTEGER NOT NULL DEFAULT 0, -- fields being sent now
                      attempts INTEGER NOT NULL DEFAULT 0,
                      lastError TEXT
                    );
                    CREATE TABLE pendingDeletion (
                      identifier TEXT PRIMARY KEY,
                      sequence INTEGER NOT NULL,
                      kind INTEGER NOT NULL,
                      contentVersion BLOB NOT NULL,
                      metadataVersion BLOB NOT NULL,
                      attempts INTEGER NOT NULL DEFAULT 0,
                      lastError TEXT
                    );
                    CREATE INDEX pendingChange_by_sequence ON pendingChange(sequence);
                    CREATE INDEX pendingDeletion_by_sequence ON pendingDeletion(sequence);
                    CREATE TABLE journalClock (sequence INTEGER NOT NULL);
                    INSERT INTO journalClock (sequence) VALUES (0);
                    -- Files whose whole content lives in the local folder rather than the block
                    -- cache: written ones, and conflict copies.
                    -- Local identifiers the remote has replaced (see resolve): operations that began
                    -- before the replacement still find their items. Emptied at every start.
                    CREATE TABLE identifierAlias (
                      local TEXT PRIMARY KEY,
                      remote TEXT NOT NULL
                    );
                    -- Users' own extended attributes (user.*), kept here only.
                    CREATE TABLE userAttribute (
                      inode INTEGER NOT NULL,
                      name TEXT NOT NULL,
                      value BLOB NOT NULL,
                      PRIMARY KEY (inode, name)
                    );
                    CREATE TABLE localContent (
                      inode INTEGER PRIMARY KEY,
                      isConflictCopy INTEGER NOT NULL DEFAULT 0
                    );
                    """)
        }
        migrator.registerMigration("v3-writes-finish") { db in
            // A deletion made with --trash moves the item to the remote's trash.
            try db.execute(sql: "ALTER TABLE pendingDeletion ADD COLUMN toTrash INTEGER NOT NULL DEFAULT 0")
        }
        registerCacheMigration(in: &migrator)
        migrator.registerMigration("v4-writer-marks") { db in
            // A writer the kernel writes for (passthrough) opened this local content, which was
            // given this modification time (nanoseconds since 1970) at the open; see markWriter.
            try db.execute(sql: "ALTER TABLE localContent ADD COLUMN writerMark INTEGER")
        }
        registerPinInheritanceMigration(in: &migrator)
        registerDurabilityMigration(in: &migrator)
        migrator.registerMigration("v5-deletion-places") { db in
            // Where a deleted item was (DECISIONS 278), until a folder's move renamed the
            // identifiers below it by their prefix (v6).
            try db.execute(sql: "ALTER TABLE pendingDeletion ADD COLUMN parentIdentifier TEXT")
            try db.execute(sql: "ALTER TABLE pendingDeletion ADD COLUMN filename BLOB")
        }
        migrator.registerMigration("v6-no-deletion-places") { db in
            // `rebaseIdentifiers` follows a folder's move by identifier prefix (DECISIONS 280).
            try db.execute(sql: "ALTER TABLE pendingDeletion DROP COLUMN parentIdentifier")
            try db.execute(sql: "ALTER TABLE pendingDeletion DROP COLUMN filename")
        }
        migrator.registerMigration("v7-deletion-paths") { db in
            // The deleted item's path, which log lines and `fpfs status` name it by (DECISIONS 242).
            try db.execute(sql: "ALTER TABLE pendingDeletion ADD COLUMN path BLOB")
        }
        migrator.registerMigration("v8-unconfirmed-creations") { db in
            // Where an item deleted here was created, when its creation was sent and never
            // confirmed: the remote may hold it there, under no identifier known here (DECISIONS 284).
            try db.execute(sql: "ALTER TABLE pendingDeletion ADD COLUMN parentIdentifier TEXT")
            try db.execute(sql: "ALTER TABLE pendingDeletion ADD COLUMN filename BLOB")
        }
        migrator.registerMigration("v9-creation-places") { db in
            // Where a creation was sent, until the remote confirms it: an answer lost (kill -9, an
            // outage) may have left the item there, and the item may have moved here since
            // (DECISIONS 290).
            try db.execute(
                sql: """
                    CREATE TABLE creationPlace (
                      inode INTEGER NOT NULL,
                      parentIdentifier TEXT NOT NULL,
                      filename BLOB NOT NULL,
                      PRIMARY KEY (inode, parentIdentifier, filename)
                    )
                    """)
        }
        registerSentContentMigration(in: &migrator)
        migrator.registerMigration("v11-sent-places") { db in
            // A move's place too, until the remote confirms it: the table holds every place a
            // send may have left the item at (DECISIONS 314).
            try db.execute(sql: "ALTER TABLE creationPlace RENAME TO sentPlace")
        }
        registerSentContentAtMigration(in: &migrator)
        return migrator
    }

    // MARK: Items

    /// Stores the root item under inode 1 (FUSE's root), whatever its identifier.
    @discardableResult
    public func saveRoot(_ item: Item) async throws -> ItemRecord {
        try await write { db in
            let arguments = try item.databaseArguments()
            let columns = ItemRecord.columns.joined(separator: ", ")
            let updates = ItemRecord.columns.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
            try db.cachedStatement(
                sql: """
                    INSERT INTO item (inode, \(columns)) VALUES (1, \(Self.placeholders))
                    ON CONFLICT(inode) DO UPDATE SET \(updates)
                    """
            ).execute(arguments: arguments)
            return ItemRecord(inode: 1, item: item)
        }
    }

    /// Inserts or updates items by identifier; an item seen before keeps its inode.
    @discardableResult
    public func upsert(_ items: [Item]) async throws -> [ItemRecord] {
        guard !items.isEmpty else { return [] }
        return try await write { db in try items.map { try Self.upsert($0, in: db) } }
    }

    static let placeholders = Array(repeating: "?", count: ItemRecord.columns.count).joined(separator: ", ")

    /// Inserts `rows` items, or updates the ones with their identifiers (which keep their inodes).
    private static func storeSQL(rows: Int) -> String {
        """
        INSERT INTO item (\(ItemRecord.columns.joined(separator: ", ")))
        VALUES \(Array(repeating: "(\(placeholders))", count: rows).joined(separator: ", "))
        ON CONFLICT(identifier) DO UPDATE SET \(
            ItemRecord.columns.dropFirst().map { "\($0) = excluded.\($0)" }.joined(separator: ", "))
        """
    }
    private static let storeSQL = storeSQL(rows: 1)
    /// `storeSQL`, answering the item's inode.
    private static let upsertSQL = storeSQL + " RETURNING inode"
    /// The statements `store` runs, by how many items each stores, the most first: a batch runs
    /// the largest that fit, so a folder of 100 items takes four runs (64, 16, 16 and 4).
    private static let storeStatements = [64, 16, 4, 1].map { (rows: $0, sql: storeSQL(rows: $0)) }
    /// The most items `store` stores with one statement.
    static let rowsPerStore = storeStatements[0].rows

    /// Upserts `items` where no one needs their inodes (a listing's items), without a cursor and
    /// many to a statement. Each run of an insert opens the cursors of the table and its indexes
    /// and reads and writes the AUTOINCREMENT counter, which cost a one-row insert more than its
    /// row did (DECISIONS 145).
    static func store(_ items: some Sequence<Item>, in db: Database) throws {
        let anythingPinned = try anythingPinned(in: db)
        var batch: [Item] = []
        batch.reserveCapacity(rowsPerStore)
        func storeBatch() throws {
            var start = 0
            for (rows, sql) in storeStatements {
                while batch.count - start >= rows {
                    try ItemBinding.execute(db.cachedStatement(sql: sql), binding: batch[start..<start + rows])
                    start += rows
                }
            }
            if anythingPinned {
                for item in batch { try inheritPin(item.identifier, in: db) }
            }
            try forgetAliases(from: batch.lazy.map(\.identifier), in: db)
            batch.removeAll(keepingCapacity: true)
        }
        for item in items {
            if item.extendedAttributes != nil {
                // An item's extended attributes are stored under its inode, which `upsert` answers.
                try storeBatch()
                _ = try upsert(item, in: db)
            } else {
                batch.append(item)
                if batch.count == rowsPerStore { try storeBatch() }
            }
        }
        try storeBatch()
    }

    static func upsert(_ item: Item, in db: Database) throws -> ItemRecord {
        // A cached statement: listings store thousands of items, and preparing each anew cost
        // more than running it.
        let statement = try db.cachedStatement(sql: upsertSQL)
        let inode = try Int64.fetchOne(statement, arguments: try item.databaseArguments())
        guard let inode else { throw DatabaseError(message: "upsert returned no inode") }
        if try anythingPinned(in: db) { try inheritPin(item.identifier, in: db) }
        try forgetAliases(from: [item.identifier], in: db)
        if let attributes = item.extendedAttributes {
            try adoptRemoteAttributes(attributes, inode: UInt64(inode), in: db)
        }
        return ItemRecord(inode: UInt64(inode), item: item)
    }

    public func record(inode: UInt64) async throws -> ItemRecord? {
        try await readStatement { db in
            try ItemRecord.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM item WHERE inode = ?"), arguments: [Int64(inode)])
        }
    }

    /// `record(inode:)` read on the calling thread, as `childNow`.
    public func recordNow(inode: UInt64) throws -> ItemRecord? {
        try sessionReader.unsafeRead { db in
            try ItemRecord.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM item WHERE inode = ?"), arguments: [Int64(inode)])
        }
    }

    public func record(identifier: ItemIdentifier) async throws -> ItemRecord? {
        try await readStatement { db in try Self.record(identifier: identifier, in: db) }
    }

    /// `record(identifier:)` read on the calling thread, as `childNow`.
    public func recordNow(identifier: ItemIdentifier) throws -> ItemRecord? {
        try sessionReader.unsafeRead { db in try Self.record(identifier: identifier, in: db) }
    }

    private static func record(identifier: ItemIdentifier, in db: Database) throws -> ItemRecord? {
        try ItemRecord.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM item WHERE identifier = \(resolvedFirst)"),
            arguments: [identifier.rawValue])
    }

    /// The path of `inode` from the root, names joined with `/` ("" for the root), or nil when the
    /// store does not know it below the root: how log lines name an item (DECISIONS 242).
    public func path(inode: UInt64) async throws -> String? {
        try await readStatement { db in try Self.path(where: "inode = ?1", [Int64(inode)], in: db) }
            .map { String(decoding: $0, as: UTF8.self) }
    }

    /// `path(inode:)` of the item with `identifier`.
    public func path(identifier: ItemIdentifier) async throws -> String? {
        try await readStatement { db in
            try Self.path(where: "identifier = \(Self.resolvedFirst)", [identifier.rawValue], in: db)
        }.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Walks from the item `condition` picks up its parents to the root (inode 1, its own parent).
    static func path(where condition: String, _ arguments: StatementArguments, in db: Database) throws -> Data? {
        try Data.fetchOne(
            db.cachedStatement(
                sql: """
                    WITH RECURSIVE up(inode, parentIdentifier, path, depth) AS (
                      SELECT inode, parentIdentifier, CASE WHEN inode = 1 THEN CAST('' AS BLOB) ELSE filename END, 0
                      FROM item WHERE \(condition)
                      UNION ALL
                      SELECT item.inode, item.parentIdentifier,
                             CASE WHEN item.inode = 1 THEN up.path
                                  ELSE item.filename || CAST('/' AS BLOB) || up.path END,
                             up.depth + 1
                      FROM item JOIN up ON item.identifier = up.parentIdentifier
                      WHERE up.inode != 1 AND up.depth < 4096)
                    SELECT CAST(path AS BLOB) FROM up WHERE inode = 1
                    """), arguments: arguments)
    }

    /// The child called `name` of the folder at inode `folder`, if the store knows one. The
    /// folder's identifier is read in the same statement: a move of it confirmed meanwhile, which
    /// on a remote of places gives it and everything below it new identifiers (DECISIONS 280),
    /// cannot make its children seem gone, as it did for a caller holding the identifier it had
    /// read before (the checker: ENOENT for a file just renamed; DECISIONS 299).
    public func child(ofFolder folder: UInt64, named name: Filename) async throws -> ItemRecord? {
        try await readStatement { db in try Self.child(ofFolder: folder, named: name, in: db) }
    }

    /// `child(ofFolder:named:)` read on the calling thread, which it blocks for the read: for the
    /// FUSE session thread, never for a task.
    public func childNow(ofFolder folder: UInt64, named name: Filename) throws -> ItemRecord? {
        // One statement is its own snapshot: no transaction around it, which cost as much as the
        // statement.
        try sessionReader.unsafeRead { db in try Self.child(ofFolder: folder, named: name, in: db) }
    }

    private static func child(ofFolder folder: UInt64, named name: Filename, in db: Database) throws -> ItemRecord? {
        try ItemRecord.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT * FROM item
                    WHERE parentIdentifier = (SELECT identifier FROM item WHERE inode = ?1) AND filename = ?2
                    """),
            arguments: [Int64(folder), Data(name.bytes)])
    }

    /// The identifier bound first (`?1`), resolved through its alias if it has one: `resolve`
    /// selects it, and a query that holds it reads in one statement what took two.
    static let resolvedFirst = "coalesce((SELECT remote FROM identifierAlias WHERE local = ?1), ?1)"

    /// Runs `value`, a read of one statement, on a reader of the pool without GRDB's transaction:
    /// one statement is its own snapshot, and the BEGIN and COMMIT around it, prepared anew each
    /// time, cost a folder's reads in a cold walk about as much as the reads (DECISIONS 150).
    func readStatement<T: Sendable>(_ value: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await database.unsafeRead(value)
    }

    /// Picks the children of the folder bound first in name order (bytewise), not the folder
    /// itself, since the root is its own parent. One clause, so that `children(of:)` and
    /// `childEntries(of:)` list in the same order, as the kernel listing's digest needs.
    private static let childrenInOrder =
        "WHERE parentIdentifier = \(resolvedFirst) AND identifier != \(resolvedFirst) ORDER BY filename"

    /// The children of `parent` the store knows, in name order (bytewise).
    public func children(of parent: ItemIdentifier) async throws -> [ItemRecord] {
        try await readStatement { db in
            try ItemRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM item " + Self.childrenInOrder), arguments: [parent.rawValue])
        }
    }

    /// `children(of:)` read on the calling thread, as `childNow`, when `parent` has at most
    /// `limit` children; nil otherwise, so that a long folder never holds that thread long.
    public func childrenNow(of parent: ItemIdentifier, atMost limit: Int) throws -> [ItemRecord]? {
        let children = try sessionReader.unsafeRead { db in
            try ItemRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM item " + Self.childrenInOrder + " LIMIT ?2"),
                arguments: [parent.rawValue, limit + 1])
        }
        return children.count > limit ? nil : children
    }

    /// The entries of `parent`'s children, in the order of `children(of:)`. Checking whether the
    /// kernel's cached listing still holds needs only these, and reading them costs a fraction of
    /// whole records (DECISIONS 112).
    public func childEntries(of parent: ItemIdentifier) async throws -> [ChildEntry] {
        try await readStatement { db in
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: "SELECT inode, filename, kind, identifier FROM item " + Self.childrenInOrder),
                arguments: [parent.rawValue])
            var entries: [ChildEntry] = []
            while let row = try rows.next() {
                let kindRaw: UInt8 = row[2]
                guard let kind = ItemKind(rawValue: kindRaw) else {
                    throw DatabaseError(message: "unknown item kind \(kindRaw)")
                }
                entries.append(
                    ChildEntry(
                        inode: UInt64(row[0] as Int64),
                        filename: (row[1] as BlobBytes).bytes,
                        kind: kind,
                        folderIdentifier: kind == .directory ? ItemIdentifier(row[3] as String) : nil))
            }
            return entries
        }
    }

    /// How many items the store knows.
    public func itemCount() async throws -> Int {
        try await database.read { db in try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM item")) ?? 0 }
    }

    // MARK: Directories

    /// Whether the store holds a listing of `directory`, and whether it is to be refreshed.
    public func listingState(of directory: ItemIdentifier) async throws -> ListingState {
        try await readStatement { db in
            let value = try Int.fetchOne(
                db.cachedStatement(sql: "SELECT isComplete FROM directory WHERE identifier = \(Self.resolvedFirst)"),
                arguments: [directory.rawValue])
            return ListingState(rawValue: value ?? 0) ?? .unlisted
        }
    }

    /// Ends a listing of `directory` that returned `seen`: children the store knew but the listing
    /// no longer has are removed (unless they have local changes the remote has not seen), and the
    /// directory is marked complete.
    static func completeListing(of directory: ItemIdentifier, seen: Set<ItemIdentifier>, in db: Database) throws {
        let known = try String.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT identifier FROM item WHERE parentIdentifier = ? AND identifier != ?
                    AND inode NOT IN (SELECT inode FROM pendingChange)
                    """), arguments: [directory.rawValue, directory.rawValue])
        for identifier in known where !seen.contains(ItemIdentifier(identifier)) {
            try db.cachedStatement(sql: "DELETE FROM item WHERE identifier = ?").execute(arguments: [identifier])
            try db.cachedStatement(sql: "DELETE FROM directory WHERE identifier = ?").execute(arguments: [identifier])
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO directory (identifier, isComplete) VALUES (?, 1)
                ON CONFLICT(identifier) DO UPDATE SET isComplete = 1
                """
        ).execute(arguments: [directory.rawValue])
    }

    // MARK: Cached content

    /// Every cache file the store knows of.
    public func contentRecords() async throws -> [ContentRecord] {
        try await database.read { db in try ContentRecord.fetchAll(db.cachedStatement(sql: "SELECT * FROM content")) }
    }

    /// Gives the cache files `identifiers` by number (a row replaced by one of them is gone): what
    /// a move on a remote whose identifiers are places makes of them (`BlockCache
    /// .followIdentifiers`).
    public func renameContents(_ identifiers: [Int64: ItemIdentifier]) async throws {
        try await write { db in
            let statement = try db.cachedStatement(sql: "UPDATE OR REPLACE content SET identifier = ? WHERE fileNumber = ?")
            for (fileNumber, identifier) in identifiers {
                try statement.execute(arguments: [identifier.rawValue, fileNumber])
            }
        }
    }

    /// The identifiers the store gives the cache files `fileNumbers` now; a file without a row is
    /// missing. An item's identifier, and so its cache file's, changes when the remote moves it on
    /// a remote whose identifiers are places (`BlockCache.followIdentifiers`).
    public func contentIdentifiers(fileNumbers: [Int64]) async throws -> [Int64: ItemIdentifier] {
        try await database.read { db in
            var identifiers: [Int64: ItemIdentifier] = [:]
            let statement = try db.cachedStatement(sql: "SELECT identifier FROM content WHERE fileNumber = ?")
            for fileNumber in fileNumbers {
                if let identifier = try String.fetchOne(statement, arguments: [fileNumber]) {
                    identifiers[fileNumber] = ItemIdentifier(identifier)
                }
            }
            return identifiers
        }
    }

    /// The first cache file number never handed out: file numbers stay unique over the store's
    /// lifetime, also those of contents since forgotten.
    public func nextContentFileNumber() async throws -> Int64 {
        try await database.read { db in
            let used = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'content'")
            return (used ?? 0) + 1
        }
    }

    /// Records a new cache file of a content version (`record`, numbered by
    /// `nextContentFileNumber` and its successors), replacing what was recorded for the item
    /// before. Returns the record it replaced, whose file is stale.
    public func beginContent(_ record: ContentRecord) async throws -> ContentRecord? {
        try await write { db in
            let old = try ContentRecord.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM content WHERE identifier = ?"),
                arguments: [record.identifier.rawValue])
            try db.cachedStatement(sql: "DELETE FROM content WHERE identifier = ?").execute(arguments: [
                record.identifier.rawValue
            ])
            try db.cachedStatement(
                sql: """
                    INSERT INTO content (fileNumber, identifier, contentVersion, size, blockSize, presentBlocks,
                      lastUsed)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                record.fileNumber, record.identifier.rawValue, Data(record.contentVersion), Int64(record.size),
                Int64(record.blockSize), Data(record.presentBlocks), record.lastUsed.timeIntervalSince1970,
            ])
            return old
        }
    }

    /// Records which blocks of a cache file hold their bytes, written in durability epoch `epoch`
    /// (MetadataStore+Durability), where `recorded` is the map saved last (or begun with). When
    /// the row's map is as long as the new one, only the span where it differs from `recorded` is
    /// written, in place (SQLite's incremental blob I/O), and nothing when none does: a commit of
    /// a few blocks of a huge file writes a page, not a map of hundreds of kilobytes. Otherwise
    /// the row's map is replaced whole, with the time of use. A row gone meanwhile (the content
    /// was discarded) is left gone.
    public func savePresentBlocks(
        fileNumber: Int64, presentBlocks: [UInt8], replacing recorded: [UInt8], epoch: Int64
    ) async throws {
        let differs = { (index: Int) in presentBlocks[index] != recorded[index] }
        var span: ClosedRange<Int>?
        if presentBlocks.count == recorded.count {
            guard let first = presentBlocks.indices.first(where: differs),
                let last = presentBlocks.indices.last(where: differs)
            else { return }
            span = first...last
        }
        try await write { [span] db in
            let stored = try Int.fetchOne(
                db.cachedStatement(sql: "SELECT length(presentBlocks) FROM content WHERE fileNumber = ?"),
                arguments: [fileNumber])
            guard let stored else { return }
            try db.cachedStatement(sql: "UPDATE content SET epoch = ? WHERE fileNumber = ? AND epoch != ?")
                .execute(arguments: [epoch, fileNumber, epoch])
            if let span, stored == presentBlocks.count {
                try Self.overwriteBlob(
                    in: db, table: "content", column: "presentBlocks", row: fileNumber, at: span.lowerBound,
                    with: Array(presentBlocks[span]))
            } else {
                try db.cachedStatement(sql: "UPDATE content SET presentBlocks = ?, lastUsed = ? WHERE fileNumber = ?")
                    .execute(arguments: [Data(presentBlocks), Date().timeIntervalSince1970, fileNumber])
            }
        }
    }

    /// Records a cache file's map in blocks of another size (`BlockCache` converts a row made by a
    /// mount with another `--block-size` when its content opens). A row gone meanwhile stays gone.
    public func changeBlockSize(fileNumber: Int64, to blockSize: UInt64, presentBlocks: [UInt8]) async throws {
        try await write { db in
            try db.cachedStatement(sql: "UPDATE content SET blockSize = ?, presentBlocks = ? WHERE fileNumber = ?")
                .execute(arguments: [Int64(blockSize), Data(presentBlocks), fileNumber])
        }
    }

    /// Writes `bytes` into the blob of `column` in `row` from `offset` on, in place: the blob keeps
    /// its length, and only the pages holding the bytes are written.
    private static func overwriteBlob(
        in db: Database, table: String, column: String, row: Int64, at offset: Int, with bytes: [UInt8]
    ) throws {
        var blob: OpaquePointer?
        var code = sqlite3_blob_open(db.sqliteConnection, "main", table, column, row, 1, &blob)
        defer { sqlite3_blob_close(blob) }
        if code == SQLITE_OK {
            code = bytes.withUnsafeBytes { sqlite3_blob_write(blob, $0.baseAddress, Int32($0.count), Int32(offset)) }
        }
        guard code == SQLITE_OK else {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
        }
    }

    /// Forgets a cache file.
    public func removeContent(fileNumber: Int64) async throws {
        try await write { db in
            try db.cachedStatement(sql: "DELETE FROM content WHERE fileNumber = ?").execute(arguments: [fileNumber])
        }
    }

    // MARK: Settings

    public func setting(_ key: String) async throws -> String? {
        try await database.read { db in
            try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM setting WHERE key = ?"), arguments: [key])
        }
    }

    public func setSetting(_ key: String, to value: String) async throws {
        try await write { db in
            try db.cachedStatement(
                sql:
                    "INSERT INTO setting (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
            ).execute(arguments: [key, value])
        }
    }
}
