// Changes the remote reports (ARCHITECTURE §5): the working set's updates and deletions, applied to the
// part of the tree the store knows. Local changes win over the remote's here: an item with a
// pending change is left as it is, and the uploader meets the remote's version when it sends
// (the conflict path of the writes). What changed is returned so that the engine can correct the
// kernel's caches and drop stale contents.

import FileProviderKit
import Foundation
import GRDB

/// One item whose record a remote change replaced (same inode).
public struct RemoteUpdate: Sendable {
    public var before: ItemRecord
    public var after: ItemRecord
}

/// What applying a batch of the remote's changes did.
public struct RemoteChangeOutcome: Sendable {
    /// Items the store knew whose record changed.
    public var updated: [RemoteUpdate] = []
    /// Items new to the store (in a folder it had listed).
    public var added: [ItemRecord] = []
    /// Items gone from the store, folders after their contents.
    public var removed: [ItemRecord] = []
    /// Inodes whose content left the local folder: the remote's newer version replaced it.
    public var releasedLocalContent: [UInt64] = []
    /// Changes not applied because the item has local changes the remote has not seen.
    public var keptLocal = 0
    /// Folders to list again: a remote item waits there for a local one to leave its name, or an
    /// item the remote deleted stays until the uploader's send of a move above it settles it.
    public var foldersToList: [ItemIdentifier] = []
    /// Items left alone because this mount's uploads changed them after the round's mark: what
    /// the remote said of them may be older than what the store holds. Ask the remote again.
    public var raced: [ItemIdentifier] = []

    public init() {}

    public var isEmpty: Bool { updated.isEmpty && added.isEmpty && removed.isEmpty }
}

extension MetadataStore {
    /// Applies one batch of the remote's changes in one transaction.
    ///
    /// - Updates of known items replace their records (renames and moves included), in a folder
    ///   never listed too (DECISIONS 292); an item that moved into a folder the store does not
    ///   know leaves the store. New items are added where their folder was listed; elsewhere they
    ///   are learned when the folder is.
    /// - A name taken by another item that has no local change means that item is gone or moved
    ///   (its own update, if any, follows): it leaves the store.
    /// - Items with pending changes, or deleted here and not yet on the remote, are left alone. A
    ///   deletion of a folder holding local work keeps that work and the folders above it, journalled
    ///   as creations, so that nothing written here is lost.
    /// - With a `mark` (`ownWritesMark`, taken before the remote was asked), items this mount's
    ///   uploads changed since are left alone and listed in `raced`: the remote's answer may
    ///   predate the upload (DECISIONS 270). Deletions of items in a move that may have reached
    ///   the remote are left to the uploader (DECISIONS 296).
    /// - `releaseLocalContent(inode)` is asked before a file whose content lives in the local
    ///   folder takes a new remote version; false (a writer has it open) leaves the item alone.
    public func applyRemoteChanges(
        updated: [Item], deleted: [ItemIdentifier], since mark: UInt64? = nil,
        releaseLocalContent: @escaping @Sendable (UInt64) -> Bool
    ) async throws -> RemoteChangeOutcome {
        try await write { [ownWrites] db in
            var outcome = RemoteChangeOutcome()
            let wroteHere: (ItemIdentifier) -> Bool = { identifier in
                mark.map { ownWrites.wrote(identifier, since: $0) } ?? false
            }
            for identifier in deleted {
                if wroteHere(identifier) {
                    outcome.raced.append(identifier)
                    continue
                }
                guard let record = try Self.record(identifier, in: db), record.inode != 1 else { continue }
                if mark != nil, try Self.liesInUnconfirmedMove(record, in: db) {
                    outcome.foldersToList.append(record.item.parentIdentifier)
                    continue
                }
                try Self.removeRemotely(record, outcome: &outcome, in: db)
            }
            for item in updated where item.identifier != .rootContainer {
                if wroteHere(item.identifier) {
                    outcome.raced.append(item.identifier)
                    continue
                }
                try Self.applyRemote(
                    item, outcome: &outcome, releaseLocalContent: releaseLocalContent, wroteHere: wroteHere, in: db)
            }
            return outcome
        }
    }

    /// Stores part of a folder's listing. Items with local changes keep their records, items
    /// deleted here stay deleted, and a name a local item holds stays the local item's.
    ///
    /// The items are stored in the order of the identifier index, `transactionSize` to a
    /// transaction. A listing comes in the server's order, which for a big folder is random
    /// across the folder's range of the indexes: each transaction then rewrote most of that range
    /// (DECISIONS 92). The journal is read once per transaction (it is short, and usually empty),
    /// not once per item.
    ///
    /// With `completing`, these are a listing's last items: its last transaction also ends the
    /// listing (`completeListing`), which saves most folders a transaction of their own.
    ///
    /// A file whose bytes live here and that the listing shows at another content version is not
    /// stored: its identifier is returned, for the caller to apply as a round would (see
    /// `heldLocally`).
    @discardableResult
    public func storeListed(
        _ items: [Item], transactionSize: Int = 1000, completing listing: CompletedListing? = nil
    ) async throws -> [ItemIdentifier] {
        let sorted = Self.inIndexOrder(items)
        guard !sorted.isEmpty || listing != nil else { return [] }
        var start = 0
        var left: [ItemIdentifier] = []
        repeat {
            let end = min(start + max(transactionSize, 1), sorted.count)
            left += try await storeListedTransaction(sorted[start..<end], completing: end == sorted.count ? listing : nil)
            start = end
        } while start < sorted.count
        return left
    }

    /// A listing that has ended: the folder, and every identifier it returned.
    public struct CompletedListing: Sendable {
        public let directory: ItemIdentifier
        public let seen: Set<ItemIdentifier>

        public init(directory: ItemIdentifier, seen: Set<ItemIdentifier>) {
            self.directory = directory
            self.seen = seen
        }
    }

    private func storeListedTransaction(_ items: ArraySlice<Item>, completing listing: CompletedListing?) async throws
        -> [ItemIdentifier]
    {
        try await write { [itemChanges] db in
            if let folder = try Self.listedFolder(of: items, completing: listing, in: db) {
                itemChanges.confineTransaction(toChildrenOf: folder)
            }
            var changedHere = Set<String>()
            var namesHeld = try Self.placesLeftBySends(in: db)
            for row in try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT identifier, parentIdentifier, filename FROM item
                        WHERE inode IN (SELECT inode FROM pendingChange)
                        """))
            {
                changedHere.insert(row["identifier"])
                namesHeld.insert(Self.place(ItemIdentifier(row["parentIdentifier"] as String), Array(row["filename"] as Data)))
            }
            changedHere.formUnion(
                try String.fetchAll(db.cachedStatement(sql: "SELECT identifier FROM pendingDeletion")))
            let (stored, left) = try Self.heldLocally(
                items.filter { item in
                    !changedHere.contains(item.identifier.rawValue)
                        && !namesHeld.contains(Self.place(item.parentIdentifier, item.filename.bytes))
                }, in: db)
            try Self.store(stored, in: db)
            if let listing { try Self.completeListing(of: listing.directory, seen: listing.seen, in: db) }
            return left
        }
    }

    /// `items` split: those a listing may store, and the files among them whose bytes live here
    /// and that the remote holds at another content version. Stored, such a file took the
    /// remote's version while the mount kept showing the bytes here, and an edit sent `If-Match`
    /// that version replaced the other's write (the checker, seed 30014 on Apache; DECISIONS 320).
    /// Applied as a round applies them, they drop the bytes here (or keep them for a writer).
    /// Only the listed folders' files with local contents are read: after a big copy into the
    /// mount, the local folder holds thousands, and every listing would read them all.
    private static func heldLocally(_ items: [Item], in db: Database) throws -> (stored: [Item], left: [ItemIdentifier]) {
        var versions: [String: Data] = [:]
        for folder in Set(items.lazy.map(\.parentIdentifier)) {
            for row in try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT item.identifier, item.contentVersion FROM localContent
                        JOIN item ON item.inode = localContent.inode WHERE item.parentIdentifier = ?
                        """), arguments: [folder.rawValue])
            {
                versions[row["identifier"]] = row["contentVersion"]
            }
        }
        guard !versions.isEmpty else { return (items, []) }
        var stored: [Item] = []
        var left: [ItemIdentifier] = []
        for item in items {
            if let version = versions[item.identifier.rawValue], version != Data(item.version.content) {
                left.append(item.identifier)
            } else {
                stored.append(item)
            }
        }
        return (stored, left)
    }

    /// The inode of the folder whose listing `items` (and `listing`) are, when they are all its
    /// children; nil when they are not, or the folder is unknown.
    private static func listedFolder(
        of items: ArraySlice<Item>, completing listing: CompletedListing?, in db: Database
    ) throws -> UInt64? {
        guard let folder = listing?.directory ?? items.first?.parentIdentifier,
            items.allSatisfy({ $0.parentIdentifier == folder })
        else { return nil }
        return try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT inode FROM item WHERE identifier = ?"), arguments: [folder.rawValue]
        ).map(UInt64.init)
    }

    /// `items` in the order of the identifier index, so that storing them fills each index in
    /// runs of neighbouring pages (DECISIONS 92).
    private static func inIndexOrder(_ items: [Item]) -> [Item] {
        items.sorted { bytewisePrecedes($0.identifier.rawValue, $1.identifier.rawValue) }
    }

    /// SQLite's order of TEXT keys (the BINARY collation): by UTF-8 bytes.
    static func bytewisePrecedes(_ a: String, _ b: String) -> Bool {
        let compared = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right -> Bool in
                let common = min(left.count, right.count)
                if common > 0, let l = left.baseAddress, let r = right.baseAddress {
                    let order = memcmp(l, r, common)
                    if order != 0 { return order < 0 }
                }
                return left.count < right.count
            }
        }
        // Both native strings keep contiguous UTF-8; a bridged one is compared byte by byte.
        if let compared, let result = compared { return result }
        return a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// The identifiers of every item the store holds that the remote gave (not the root, not items
    /// made here and not yet sent): what a full re-enumeration compares with the remote's list.
    public func remoteIdentifiers() async throws -> Set<ItemIdentifier> {
        try await database.read { db in
            let rows = try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT identifier FROM item WHERE inode != 1
                        AND inode NOT IN (SELECT inode FROM pendingChange WHERE isCreation = 1)
                        """))
            return Set(rows.map { ItemIdentifier($0) })
        }
    }

    /// Where the journal stands: its clock, and whether anything waits in it.
    public func journalState() async throws -> JournalState {
        try await database.read { db in try Self.journalState(in: db) }
    }

    private static func journalState(in db: Database) throws -> JournalState {
        let sequence = try Int64.fetchOne(db.cachedStatement(sql: "SELECT sequence FROM journalClock")) ?? 0
        let waiting = try Bool.fetchOne(
            db.cachedStatement(
                sql: "SELECT EXISTS (SELECT 1 FROM pendingChange) OR EXISTS (SELECT 1 FROM pendingDeletion)"))
        return JournalState(sequence: sequence, isEmpty: !(waiting ?? false))
    }

    /// Replaces the stored listing of `directory` with `items` (all of them), provided the journal
    /// is still empty at `sequence`: the listing then shows every local change, and no local change
    /// came since. Otherwise nothing changes and nil says so. For listing a stale folder again,
    /// where the store already holds children that local changes may have moved on. Files whose
    /// bytes live here at another content version are left out, as `storeListed` leaves them,
    /// and returned.
    public func replaceListing(
        of directory: ItemIdentifier, with items: [Item], ifJournalAt sequence: Int64
    ) async throws -> [ItemIdentifier]? {
        try await write { db in
            let now = try Self.journalState(in: db)
            guard now.sequence == sequence, now.isEmpty else { return nil }
            let (stored, left) = try Self.heldLocally(Self.inIndexOrder(items), in: db)
            try Self.store(stored, in: db)
            try Self.completeListing(of: directory, seen: Set(items.map(\.identifier)), in: db)
            return left
        }
    }

    /// Marks listed folders stale, so that their next use lists them again.
    public func markListingsStale(_ directories: [ItemIdentifier]) async throws {
        guard !directories.isEmpty else { return }
        try await write { db in
            for directory in directories {
                try db.cachedStatement(
                    sql: "UPDATE directory SET isComplete = ? WHERE identifier = ? AND isComplete = ?"
                ).execute(arguments: [
                    ListingState.stale.rawValue, directory.rawValue, ListingState.complete.rawValue,
                ])
            }
        }
    }

    /// The folders whose listing the store holds, complete or stale (the root among them once
    /// listed).
    public func listedDirectories() async throws -> Set<ItemIdentifier> {
        try await database.read { db in
            let rows = try String.fetchAll(
                db.cachedStatement(sql: "SELECT identifier FROM directory WHERE isComplete != 0"))
            return Set(rows.map { ItemIdentifier($0) })
        }
    }

    /// The folders whose listing the store holds whose identifiers start with `prefix`.
    public func listedDirectories(below prefix: String) async throws -> [ItemIdentifier] {
        guard let end = Self.end(ofPrefix: prefix) else { return [] }
        return try await database.read { db in
            try String.fetchAll(
                db.cachedStatement(
                    sql: "SELECT identifier FROM directory WHERE isComplete != 0 AND identifier >= ? AND identifier < ?"),
                arguments: [prefix, end]
            ).map { ItemIdentifier($0) }
        }
    }

    // MARK: Helpers

    private static func record(_ identifier: ItemIdentifier, in db: Database) throws -> ItemRecord? {
        try ItemRecord.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM item WHERE identifier = ?"), arguments: [identifier.rawValue])
    }

    static func pending(_ inode: UInt64, in db: Database) throws -> PendingChange? {
        try PendingChange.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM pendingChange WHERE inode = ?"), arguments: [Int64(inode)])
    }

    static func hasLocalContent(_ inode: UInt64, in db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM localContent WHERE inode = ?"), arguments: [Int64(inode)]) ?? false
    }

    /// Whether `record`, or a folder above it, has a move journalled that may have reached the
    /// remote already (under way, or tried before): a round that finds the item gone may see that
    /// move, not a deletion. Taken for one, everything written below the folder was journalled
    /// as creations and met itself at the new name as conflict copies (checker seed 13020 on
    /// Apache). The uploader's send of the move settles it: its answer moves the subtree, and a
    /// remote without the item answers `noSuchItem`, which applies the deletion as a round would
    /// (DECISIONS 296).
    private static func liesInUnconfirmedMove(_ record: ItemRecord, in db: Database) throws -> Bool {
        let moves = ItemFields([.filename, .parentIdentifier])
        let anyUnconfirmed = try Bool.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT EXISTS (SELECT 1 FROM pendingChange
                      WHERE NOT isCreation AND (sending != 0 OR attempts > 0) AND ((fields | sending) & ?) != 0)
                    """), arguments: [Int64(moves.rawValue)])
        guard anyUnconfirmed == true else { return false }
        var current: ItemRecord? = record
        while let item = current, item.inode != 1 {
            if let change = try pending(item.inode, in: db), !change.isCreation,
                !change.sending.isEmpty || change.attempts > 0, !change.fields.union(change.sending).isDisjoint(with: moves)
            {
                return true
            }
            current = try Self.record(item.item.parentIdentifier, in: db)
        }
        return false
    }

    /// Local work a remote deletion must not take away: an item never sent, or a file whose
    /// content was written here. (A pending chmod or rename of a deleted item is simply lost.)
    static func holdsLocalWork(_ record: ItemRecord, in db: Database) throws -> Bool {
        guard let change = try pending(record.inode, in: db) else { return false }
        if change.isCreation || change.fields.union(change.sending).contains(.contents) { return true }
        return record.item.kind == .file ? try hasLocalContent(record.inode, in: db) : false
    }

    private static func isListed(_ directory: ItemIdentifier, in db: Database) throws -> Bool {
        if directory == .rootContainer { return true }
        return try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT isComplete != 0 FROM directory WHERE identifier = ?"),
            arguments: [directory.rawValue])
            ?? false
    }

    private static func applyRemote(
        _ remote: Item, outcome: inout RemoteChangeOutcome, releaseLocalContent: (UInt64) -> Bool,
        wroteHere: (ItemIdentifier) -> Bool, in db: Database
    ) throws {
        let deletedHere = try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM pendingDeletion WHERE identifier = ?"),
            arguments: [remote.identifier.rawValue])
        if deletedHere ?? false {
            outcome.keptLocal += 1
            return
        }
        let existing = try record(remote.identifier, in: db)
        if let existing, try pending(existing.inode, in: db) != nil {
            outcome.keptLocal += 1
            return
        }
        // A new item is learned when its folder is listed. One the store knows stays known in a
        // folder never listed (one made here, say), so that what only the store keeps of it (its
        // inode, users' attributes a remote cannot hold) is not dropped (DECISIONS 292).
        guard try record(remote.parentIdentifier, in: db) != nil || remote.parentIdentifier == .rootContainer else {
            if let existing { try removeRemotely(existing, outcome: &outcome, in: db) }
            return
        }
        guard try existing != nil || isListed(remote.parentIdentifier, in: db) else { return }
        // The store keeps users' attributes apart from the record, and FUSE caches none: when only
        // they may differ, they are taken without counting as a change the kernel must hear of.
        var plain = remote
        plain.extendedAttributes = nil
        // A remote that keeps whole seconds (WebDAV's getlastmodified, S3) lists the time set
        // here without its fraction: the same time, not a change (every upload came back so).
        if let existing, remote.contentModificationDate.nanoseconds == 0,
            remote.contentModificationDate.seconds == existing.item.contentModificationDate.seconds
        {
            plain.contentModificationDate = existing.item.contentModificationDate
        }
        if let existing, existing.item == plain {
            if let attributes = remote.extendedAttributes {
                try adoptRemoteAttributes(attributes, inode: existing.inode, in: db)
            }
            return
        }
        if let existing, existing.item.kind != remote.kind {
            try removeRemotely(existing, outcome: &outcome, in: db)
            return try applyRemote(
                remote, outcome: &outcome, releaseLocalContent: releaseLocalContent, wroteHere: wroteHere, in: db)
        }
        if let occupant = try ItemRecord.fetchOne(
            db.cachedStatement(
                sql: "SELECT * FROM item WHERE parentIdentifier = ? AND filename = ? AND identifier != ?"),
            arguments: [remote.parentIdentifier.rawValue, Data(remote.filename.bytes), remote.identifier.rawValue])
        {
            // The local item with that name goes up under a conflict name (the uploader's
            // collision path); until then the remote's waits for the next listing.
            if try pending(occupant.inode, in: db) != nil {
                outcome.keptLocal += 1
                outcome.foldersToList.append(remote.parentIdentifier)
                return
            }
            // The name is the occupant's since an upload of ours: the remote's claim may be older.
            if wroteHere(occupant.identifier) {
                outcome.raced.append(remote.identifier)
                return
            }
            try removeRemotely(occupant, outcome: &outcome, in: db)
        }
        guard let existing else {
            // Maybe what a creation whose answer was lost made there: that creation decides.
            guard try !isPlaceLeftBySend(remote.parentIdentifier, remote.filename, in: db) else { return }
            outcome.added.append(try upsert(remote, in: db))
            return
        }
        if try isLateSend(remote, of: existing, in: db) {
            // The file's bytes here go again, based on the version the store holds: the uploader
            // meets the remote's as a conflict, and tells its own earlier bytes from another's.
            try journal([.contents, .contentModificationDate], inode: existing.inode, in: db)
            outcome.keptLocal += 1
            return
        }
        if existing.item.version.content != remote.version.content, try hasLocalContent(existing.inode, in: db) {
            guard releaseLocalContent(existing.inode) else {
                outcome.keptLocal += 1
                return
            }
            try db.cachedStatement(sql: "DELETE FROM localContent WHERE inode = ?").execute(arguments: [
                Int64(existing.inode)
            ])
            outcome.releasedLocalContent.append(existing.inode)
        }
        outcome.updated.append(RemoteUpdate(before: existing, after: try upsert(remote, in: db)))
    }

    /// Whether `remote`, a new version of the file `existing` whose bytes were written here, may be
    /// a send whose answer was lost, landing after a later send the remote confirmed: in the same
    /// place, it has the size of one of that file's, or of an item's that had its identifier and
    /// left it (deleted: a file renamed over it; moved away: a file moved to its place, DECISIONS
    /// 321). Apache checks a `PUT`'s precondition as it begins and replaces the file as it ends,
    /// and a killed daemon's `PUT` ended a second after the next daemon's had made the file: taken
    /// for the remote's edit, it replaced the version written here (the checker, seed 28020 on
    /// Apache; DECISIONS 319).
    private static func isLateSend(_ remote: Item, of existing: ItemRecord, in db: Database) throws -> Bool {
        guard existing.item.kind == .file, remote.kind == .file,
            existing.item.version.content != remote.version.content,
            remote.parentIdentifier == existing.item.parentIdentifier, remote.filename == existing.item.filename
        else { return false }
        return try hasLocalContent(existing.inode, in: db)
            && sentContent(ofSize: remote.size, inode: existing.inode, orAt: remote.identifier, in: db)
    }

    /// Removes `record` and what lies below it, except local work (see `holdsLocalWork`), which
    /// stays with the folders above it, all journalled as creations.
    private static func removeRemotely(_ record: ItemRecord, outcome: inout RemoteChangeOutcome, in db: Database)
        throws
    {
        // The subtree, folders before their contents.
        var subtree: [ItemRecord] = [record]
        var index = 0
        while index < subtree.count {
            let folder = subtree[index]
            index += 1
            guard folder.item.kind == .directory else { continue }
            subtree += try ItemRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM item WHERE parentIdentifier = ? AND identifier != ?"),
                arguments: [folder.identifier.rawValue, folder.identifier.rawValue])
        }
        var kept = Set<ItemIdentifier>()
        for item in subtree.reversed() where try holdsLocalWork(item, in: db) || kept.contains(item.identifier) {
            kept.insert(item.identifier)
            kept.insert(item.item.parentIdentifier)
        }
        for item in subtree.reversed() where !kept.contains(item.identifier) {
            try Self.forget(item, in: db)
            outcome.removed.append(item)
        }
        // Folders first, so each is created on the remote before what it holds.
        for item in subtree where kept.contains(item.identifier) {
            outcome.keptLocal += 1
            try journalCreation(of: item, in: db)
        }
    }

    /// Journals `record` as a creation of all it is, after every entry there: the remote no longer
    /// has the item it was.
    static func journalCreation(of record: ItemRecord, in db: Database) throws {
        var fields: ItemFields = [.filename, .parentIdentifier, .contentModificationDate, .permissions]
        if record.item.kind == .file { fields.insert(.contents) }
        if record.item.kind == .symlink { fields.insert(.symlinkTarget) }
        try db.cachedStatement(
            sql: """
                INSERT INTO pendingChange (inode, sequence, isCreation, fields) VALUES (?, ?, 1, ?)
                ON CONFLICT(inode) DO UPDATE SET isCreation = 1, sequence = excluded.sequence,
                  fields = fields | sending | excluded.fields, sending = 0
                """
        ).execute(arguments: [Int64(record.inode), try nextSequence(in: db), Int64(fields.rawValue)])
    }
}
