// The journal of local changes (ARCHITECTURE §4): every write-type operation saves its result in the
// item table and, in the same transaction, records what the remote still needs to hear. The
// uploader reads the journal in order and reports each success or failure back.

import FileProviderKit
import Foundation
import GRDB

extension MetadataStore {
    /// Stores an item made here, journals its creation and, for a file, notes that its content
    /// lives in the local folder. A new directory is complete: it has no children anywhere yet.
    /// Nil when its folder has an item of that name already (checked in the same transaction).
    /// `whileInserting` gets the new inode before the transaction commits, so what it records
    /// holds before the uploader can read the entry; it must not block. With `folder`, the item's
    /// parent is the folder at that inode, as the store names it now (see `parent(_:in:)`).
    public func insertLocalItem(
        _ item: Item, fields: ItemFields, inFolder folder: UInt64? = nil,
        whileInserting: @Sendable (UInt64) -> Void = { _ in }
    ) async throws -> ItemRecord? {
        try await write { db in
            var item = item
            item.parentIdentifier = try Self.parent(item.parentIdentifier, folder: folder, in: db)
            let taken = try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM item WHERE parentIdentifier = ? AND filename = ?"),
                arguments: [item.parentIdentifier.rawValue, Data(item.filename.bytes)])
            guard taken == nil else { return nil }
            let record = try Self.upsert(item, in: db)
            let sequence = try Self.nextSequence(in: db)
            try db.cachedStatement(
                sql: "INSERT INTO pendingChange (inode, sequence, isCreation, fields) VALUES (?, ?, 1, ?)"
            ).execute(arguments: [Int64(record.inode), sequence, Int64(fields.rawValue)])
            switch item.kind {
            case .directory:
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO directory (identifier, isComplete) VALUES (?, 1)")
                    .execute(arguments: [item.identifier.rawValue])
            case .file:
                try Self.noteLocalContent(inode: record.inode, in: db)
            case .symlink:
                break
            }
            whileInserting(record.inode)
            return record
        }
    }

    /// Saves a local change of a known item and journals the `fields` it changed (merged with what
    /// is already pending). With `localContent` the item's content now lives in the local folder.
    /// Returns nil when the item is gone (deleted, while a handle still writes to it). With
    /// `folder`, the item's parent is the folder at that inode (a move here; see `parent(_:in:)`).
    @discardableResult
    public func saveLocalChange(
        _ item: Item, inode: UInt64, fields: ItemFields, localContent: Bool = false, inFolder folder: UInt64? = nil
    ) async throws -> ItemRecord? {
        try await write { db in
            guard
                var stored = try ItemRecord.fetchOne(
                    db.cachedStatement(sql: "SELECT * FROM item WHERE inode = ?"), arguments: [Int64(inode)])
            else { return nil }
            // The identity (identifier, version) is the remote's to give, never a change's.
            var changed = item
            changed.identifier = stored.identifier
            changed.version = stored.item.version
            // A change that does not move the item keeps the folder the store has: the caller's
            // copy may name it as it was before a move of it was confirmed (DECISIONS 299).
            changed.parentIdentifier =
                fields.contains(.parentIdentifier)
                ? try Self.parent(item.parentIdentifier, folder: folder, in: db) : stored.item.parentIdentifier
            try Self.update(changed, from: stored.item, inode: inode, in: db)
            stored.item = changed
            try Self.journal(fields, inode: inode, in: db)
            if localContent { try Self.noteLocalContent(inode: inode, in: db) }
            return stored
        }
    }

    /// Removes an item from the store. Unless it never reached the remote, its deletion is
    /// journalled, based on the version the store knew; with `toTrash`, as a move to the remote's
    /// trash. True when the item's creation was sent and never confirmed: the deletion then finds
    /// it by its place, and the caller keeps its bytes to tell it from another's (DECISIONS 284).
    @discardableResult
    public func deleteLocally(inode: UInt64, toTrash: Bool = false) async throws -> Bool {
        try await write { db in
            guard
                let record = try ItemRecord.fetchOne(
                    db.cachedStatement(sql: "SELECT * FROM item WHERE inode = ?"), arguments: [Int64(inode)])
            else { return false }
            // An item never sent needs no deletion. One whose creation is being sent does, in its
            // place in the order (completeCreation gives it the remote identifier), and so does one
            // whose creation was tried: the remote may have made it, its answer lost.
            let pending = try PendingChange.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM pendingChange WHERE inode = ?"), arguments: [Int64(inode)])
            let tried = pending.map { !$0.sending.isEmpty || $0.attempts > 0 } ?? false
            let unconfirmed = tried && pending?.isCreation == true
            // A move sent whose answer was lost (a kill -9) may have taken the item to its place
            // here: the deletion looks for it there too when its identifier names nothing
            // (DECISIONS 306).
            let unconfirmedMove =
                tried && pending?.isCreation == false
                && pending.map { !$0.fields.union($0.sending).isDisjoint(with: [.filename, .parentIdentifier]) } == true
            if pending.map({ !$0.isCreation }) ?? true || unconfirmed {
                let item = record.item
                // Where its creation or move was last sent, which a move here since did not change
                // (DECISIONS 290, 314).
                let sent = try Row.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT parentIdentifier, filename FROM sentPlace WHERE inode = ?
                            ORDER BY rowid DESC LIMIT 1
                            """), arguments: [Int64(inode)])
                let place: (parent: String, filename: Data)? =
                    unconfirmed || unconfirmedMove
                    ? (sent?[0] ?? item.parentIdentifier.rawValue, sent?[1] ?? Data(item.filename.bytes)) : nil
                try db.cachedStatement(
                    sql: """
                        INSERT OR REPLACE INTO pendingDeletion
                          (identifier, sequence, kind, contentVersion, metadataVersion, toTrash, path,
                           parentIdentifier, filename, inode)
                          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [
                    item.identifier.rawValue, try Self.nextSequence(in: db), Int64(item.kind.rawValue),
                    Data(item.version.content), Data(item.version.metadata), toTrash,
                    try Self.path(where: "inode = ?1", [Int64(inode)], in: db),
                    place?.parent, place?.filename, Int64(inode),
                ])
                try Self.forget(record, keepingSentContents: true, in: db)
            } else {
                try Self.forget(record, in: db)
            }
            return unconfirmed
        }
    }

    /// Everything the remote still needs to hear, in the order it may be sent: journal order,
    /// except that a folder's pending creation comes just before the first entry inside it, and
    /// a folder's move to another folder after the pending moves of that folder and the folders
    /// it lies in (one of them may lie inside the moved folder on the remote, DECISIONS 286). A
    /// change merged into a pending creation moves it to the end of the journal (`cp -a` sets a
    /// folder's mode and times after filling it; a folder made and then renamed), behind what waits
    /// for it to exist; in journal order, what is inside would wait for it forever (DECISIONS 170).
    /// The first `limit` entries of the journal and the creations they wait on: the uploader looks
    /// at the head of the journal only, so that a long journal costs the same to look at as a
    /// short one.
    public func pendingWork(limit: Int = Int(Int32.max)) async throws -> [PendingWork] {
        try await database.read { db in
            let changes = try Array(
                Row.fetchCursor(
                    db.cachedStatement(sql: "\(Self.pendingChangeColumns) ORDER BY pendingChange.sequence LIMIT ?"),
                    arguments: [limit]
                ).map(Self.pendingChange))
            // The pending creation of each folder asked about (nil: it has none), by identifier.
            var creations: [String: PendingWork?] = [:]
            // The folders of the head that move, by inode.
            var folderMoves: Set<UInt64> = []
            for (entry, identifier, kind) in changes {
                guard case .change(let change, _) = entry else { continue }
                if change.isCreation { creations[identifier] = entry }
                if kind == .directory, Self.isMove(change) { folderMoves.insert(change.inode) }
            }
            // The pending moves of a folder and of the folders it lies in, here (once per folder).
            var ancestorMoves: [String: [PendingWork]] = [:]
            func pendingMoves(around folder: ItemIdentifier) throws -> [PendingWork] {
                if let known = ancestorMoves[folder.rawValue] { return known }
                let moves = try Row.fetchAll(
                    db.cachedStatement(
                        sql: """
                            WITH RECURSIVE chain(identifier) AS (
                              SELECT ? UNION
                              SELECT item.parentIdentifier FROM item JOIN chain ON item.identifier = chain.identifier)
                            \(Self.pendingChangeColumns) JOIN chain ON chain.identifier = item.identifier
                            WHERE NOT pendingChange.isCreation AND ((fields | sending) & ?) != 0
                            ORDER BY pendingChange.sequence
                            """), arguments: [folder.rawValue, Int64(ItemFields.parentIdentifier.rawValue)]
                ).map { Self.pendingChange($0).work }
                for case .change(let change, _) in moves { folderMoves.insert(change.inode) }
                ancestorMoves[folder.rawValue] = moves
                return moves
            }
            let deletions = try PendingDeletion.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM pendingDeletion ORDER BY sequence LIMIT ?"), arguments: [limit]
            ).map(PendingWork.deletion)
            let head = (changes.map(\.work) + deletions).sorted { $0.sequence < $1.sequence }.prefix(limit)
            // Each entry after the pending creations of the folders it lies in, those not in the
            // head read from the journal by the folder's identifier (once per folder).
            var placed: Set<PendingWork> = []
            var ordered: [PendingWork] = []
            func place(_ entry: PendingWork) throws {
                guard placed.insert(entry).inserted else { return }
                if case .change(let change, let parent) = entry {
                    if folderMoves.contains(change.inode) {
                        for move in try pendingMoves(around: parent) { try place(move) }
                    }
                    if creations[parent.rawValue] == nil {
                        creations[parent.rawValue] = .some(
                            try Row.fetchOne(
                                db.cachedStatement(
                                    sql:
                                        "\(Self.pendingChangeColumns) WHERE item.identifier = ? AND pendingChange.isCreation"
                                ),
                                arguments: [parent.rawValue]
                            ).map { Self.pendingChange($0).work })
                    }
                    if let creation = creations[parent.rawValue] ?? nil { try place(creation) }
                }
                ordered.append(entry)
            }
            for entry in head { try place(entry) }
            return ordered
        }
    }

    /// What `pendingWork` reads of a change: the entry, its item's parent, identifier and kind.
    private static let pendingChangeColumns = """
        SELECT pendingChange.*, item.parentIdentifier, item.identifier, item.kind,
          EXISTS (SELECT 1 FROM sentPlace WHERE sentPlace.inode = item.inode AND \(sentPlaceLeft))
        FROM pendingChange JOIN item ON item.inode = pendingChange.inode
        """

    /// Decodes a `pendingChangeColumns` row.
    private static func pendingChange(_ row: Row) -> (work: PendingWork, identifier: String, kind: ItemKind?) {
        var change = PendingChange(row: row, from: 0)
        change.leftASentPlace = row[10]
        return (PendingWork.change(change, parent: ItemIdentifier(row[7] as String)), row[8], ItemKind(rawValue: row[9]))
    }

    /// Whether a change moves an item the remote has (or is being told of) to a folder: not a
    /// creation still to send, nor a rename in place.
    private static func isMove(_ change: PendingChange) -> Bool {
        (!change.isCreation || !change.sending.isEmpty)
            && change.fields.union(change.sending).contains(.parentIdentifier)
    }

    /// The condition that the item (joined) is no longer at a `sentPlace` row's place.
    private static let sentPlaceLeft = """
        (item.parentIdentifier != sentPlace.parentIdentifier OR item.filename != sentPlace.filename)
        """

    /// The places unconfirmed creations and moves were sent to and their items have left, each as
    /// its folder's identifier, a NUL and the name: what a lost answer may have left there is the
    /// item's own until it is sent again (`Uploader.madeElsewhere`, `Uploader.movedEarlier`), so
    /// neither a listing nor a round learns it as another item (DECISIONS 305, 314).
    static func placesLeftBySends(in db: Database) throws -> Set<[UInt8]> {
        Set(
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT sentPlace.parentIdentifier, sentPlace.filename
                        FROM sentPlace JOIN item ON item.inode = sentPlace.inode
                        WHERE \(Self.sentPlaceLeft)
                        """)
            ).map { Self.place(ItemIdentifier($0[0] as String), Array($0[1] as Data)) })
    }

    /// Whether an unconfirmed creation or move was sent to `name` in `folder` and its item has
    /// left it (`placesLeftBySends`).
    static func isPlaceLeftBySend(_ folder: ItemIdentifier, _ name: Filename, in db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT 1 FROM sentPlace JOIN item ON item.inode = sentPlace.inode
                    WHERE sentPlace.parentIdentifier = ? AND sentPlace.filename = ? AND \(Self.sentPlaceLeft)
                    """), arguments: [folder.rawValue, Data(name.bytes)]) ?? false
    }

    /// A folder's identifier and a name in it, as one key.
    static func place(_ folder: ItemIdentifier, _ name: [UInt8]) -> [UInt8] {
        Array(folder.rawValue.utf8) + [0] + name
    }

    /// Records that the creation or move of the item at `inode` is sent to `filename` in `folder`,
    /// a place other than the item's (a temporary name while its own is another's): a lost answer
    /// may leave it there (DECISIONS 311, 314). The last place sent to comes last.
    public func noteSentPlace(inode: UInt64, folder: ItemIdentifier, filename: Filename) async throws {
        try await write { db in try Self.noteSentPlace(inode: inode, folder: folder, filename: filename, in: db) }
    }

    private static func noteSentPlace(
        inode: UInt64, folder: ItemIdentifier, filename: Filename, in db: Database
    ) throws {
        try db.cachedStatement(
            sql: "INSERT OR REPLACE INTO sentPlace (inode, parentIdentifier, filename) VALUES (?, ?, ?)"
        ).execute(arguments: [Int64(inode), folder.rawValue, Data(filename.bytes)])
    }

    /// Forgets that the creation of the item at `inode` was sent to `filename` in `folder`: the
    /// remote answered that the name was taken, so it made nothing there, and what holds the name
    /// is another's, to be listed (DECISIONS 305).
    public func forgetSentPlace(inode: UInt64, folder: ItemIdentifier, filename: Filename) async throws {
        try await write { db in
            try db.cachedStatement(
                sql: "DELETE FROM sentPlace WHERE inode = ? AND parentIdentifier = ? AND filename = ?"
            ).execute(arguments: [Int64(inode), folder.rawValue, Data(filename.bytes)])
        }
    }

    /// Where the unconfirmed creation or moves of the item at `inode` were sent, other than its
    /// place now: where a lost answer may have left it (DECISIONS 290, 314). Not a place another
    /// item's send went to since: what is there may be that item's, its answer not yet in
    /// (DECISIONS 317).
    public func earlierSentPlaces(inode: UInt64) async throws -> [(parent: ItemIdentifier, filename: Filename)] {
        try await database.read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT sentPlace.parentIdentifier, sentPlace.filename
                        FROM sentPlace JOIN item ON item.inode = sentPlace.inode
                        WHERE sentPlace.inode = ? AND \(Self.sentPlaceLeft)
                          AND NOT EXISTS (
                            SELECT 1 FROM sentPlace AS later
                            WHERE later.parentIdentifier = sentPlace.parentIdentifier
                              AND later.filename = sentPlace.filename
                              AND later.inode != sentPlace.inode AND later.rowid > sentPlace.rowid)
                        """), arguments: [Int64(inode)]
            ).map { (ItemIdentifier($0[0] as String), Filename(bytes: Array($0[1] as Data))) }
        }
    }

    /// The pending change of an item, if any.
    public func pendingChange(inode: UInt64) async throws -> PendingChange? {
        try await database.read { db in
            try PendingChange.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM pendingChange WHERE inode = ?"), arguments: [Int64(inode)])
        }
    }

    /// How many journal entries wait, how many of them have failed at least once, and the bytes
    /// of the contents they will send.
    public func pendingTotals() async throws -> (pending: Int, failing: Int, bytes: UInt64) {
        try await database.read { db in
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT COUNT(*) AS pending, COALESCE(SUM(attempts > 0), 0) AS failing,
                        COALESCE(SUM(bytes), 0) AS bytes FROM (
                          SELECT attempts, CASE WHEN isCreation OR (fields | sending) & ? THEN item.size ELSE 0 END AS bytes
                          FROM pendingChange JOIN item ON item.inode = pendingChange.inode
                          UNION ALL SELECT attempts, 0 FROM pendingDeletion)
                        """), arguments: [Int64(ItemFields.contents.rawValue)])
            return (row?["pending"] ?? 0, row?["failing"] ?? 0, UInt64(row?["bytes"] ?? Int64(0)))
        }
    }

    /// The first `limit` journal entries, in order, as `fpfs status` lists them.
    public func pendingSummary(limit: Int) async throws -> [PendingSummary] {
        try await database.read { db in
            try PendingSummary.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT sequence, CASE WHEN isCreation THEN 'create' ELSE 'change' END AS action,
                          CAST(filename AS TEXT) AS name, item.size AS bytes, attempts, lastError,
                          sending != 0 AS isSending
                        FROM pendingChange JOIN item ON item.inode = pendingChange.inode
                        UNION ALL
                        SELECT sequence, 'delete', COALESCE(CAST(path AS TEXT), identifier), 0, attempts, lastError, 0
                        FROM pendingDeletion
                        ORDER BY sequence LIMIT ?
                        """), arguments: [limit])
        }
    }

    /// Takes a pending change for sending: its fields move aside (`sending`), so that changes made
    /// while it is sent gather anew, and comes back with the item as it is now. Nil when there is
    /// nothing to send (the item was deleted, or sent already) or the entry is no longer at
    /// `sequence`: it changed since the caller read the journal, and its place in the order with it.
    public func beginSending(inode: UInt64, sequence: Int64) async throws
        -> (change: PendingChange, record: ItemRecord)?
    {
        try await write { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT item.*, pendingChange.* FROM pendingChange JOIN item ON item.inode = pendingChange.inode
                            WHERE pendingChange.inode = ?
                            """), arguments: [Int64(inode)])
            else { return nil }
            let change = PendingChange(joinedRow: row)
            guard change.sequence == sequence, change.isCreation || !change.fields.isEmpty else { return nil }
            try db.cachedStatement(sql: "UPDATE pendingChange SET sending = fields, fields = 0 WHERE inode = ?")
                .execute(arguments: [Int64(inode)])
            let record = try ItemRecord(row: row)
            if change.isCreation || !change.fields.isDisjoint(with: [.filename, .parentIdentifier]) {
                try Self.noteSentPlace(
                    inode: inode, folder: record.item.parentIdentifier, filename: record.item.filename, in: db)
            }
            return (change, record)
        }
    }

    /// Records that `createItem` made the item `remote`: the item takes the remote identifier and
    /// version (its children and cached content follow the identifier), and the creation is done.
    /// Changes made while it was sent stay pending, and so do `stillPending` (a name the remote
    /// does not have yet). With `overtaken`, `remote` holds another's bytes written after these
    /// (see `overtakenContents`).
    public func completeCreation(
        inode: UInt64, localIdentifier: ItemIdentifier, remote: Item, stillPending: ItemFields = [],
        overtaken: Bool = false
    ) async throws -> CompletedSend {
        try await write { [ownWrites] db in
            ownWrites.note([remote.identifier])
            guard
                let record = try ItemRecord.fetchOne(
                    db.cachedStatement(sql: "SELECT * FROM item WHERE inode = ?"), arguments: [Int64(inode)])
            else {
                return try Self.rebaseDeletion(
                    of: localIdentifier, onto: remote, keepingContentVersion: overtaken, in: db)
            }
            var identity = try Self.takeRemoteIdentity(
                of: remote, replacing: record, inode: inode, alias: true, keepingContentVersion: overtaken, in: db)
            try db.cachedStatement(sql: "UPDATE pendingChange SET isCreation = 0 WHERE inode = ?").execute(arguments: [
                Int64(inode)
            ])
            try db.cachedStatement(sql: "DELETE FROM sentPlace WHERE inode = ?").execute(arguments: [Int64(inode)])
            try Self.finishSending(inode: inode, in: db)
            let stillPending = overtaken ? stillPending.union(Self.overtakenContents) : stillPending
            if !stillPending.isEmpty { try Self.journal(stillPending, inode: inode, in: db) }
            identity.modificationDate = try Self.adoptModificationTime(of: remote, inode: inode, in: db)
            return CompletedSend(identity: identity)
        }
    }

    /// Records that `modifyItem` succeeded with the item now `remote` on the remote. When the item
    /// was deleted here meanwhile, its pending deletion is based on `remote` instead: the remote's
    /// new version is this change's own, not a conflict. `stillPending` stay journalled (a name
    /// the remote does not have yet). With `overtaken`, `remote` holds another's bytes written
    /// after these (see `overtakenContents`). With `movingPrefix`, the move of a folder on a remote
    /// whose identifiers are places: what lay below it follows it, as `rebaseIdentifiers` does.
    public func completeModification(
        inode: UInt64, previousIdentifier: ItemIdentifier, remote: Item, stillPending: ItemFields = [],
        overtaken: Bool = false, movingPrefix prefixes: (old: String, new: String)? = nil
    ) async throws -> CompletedSend {
        try await write { [ownWrites] db in
            ownWrites.note([previousIdentifier, remote.identifier])
            // The items below a moved folder follow it in this transaction, after the folder: a
            // round between the two found them under the old identifiers, no longer in a move
            // being sent, and took them for deleted on the remote (DECISIONS 308).
            let followMove = {
                if let prefixes { try Self.rebaseIdentifiers(below: prefixes.old, onto: prefixes.new, in: db) }
            }
            guard
                let record = try ItemRecord.fetchOne(
                    db.cachedStatement(sql: "SELECT * FROM item WHERE inode = ?"), arguments: [Int64(inode)])
            else {
                let completed = try Self.rebaseDeletion(
                    of: previousIdentifier, onto: remote, keepingContentVersion: overtaken, in: db)
                try followMove()
                return completed
            }
            // A change that sent no contents (a chmod, a setxattr, a rename) meets a file whose
            // contents moved on the remote meanwhile without a conflict: metadata is last writer
            // wins. Taking the remote's content version with it would show the old bytes (or none)
            // under the new version for good; kept, the uploader then applies the remote's item as
            // any remote change (the checker: an empty file here, 1979 bytes there; DECISIONS 293).
            let sent = try PendingChange.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM pendingChange WHERE inode = ?"), arguments: [Int64(inode)]
            )?.sending ?? []
            // A remote whose content version holds the time (the folder remote) moves it for a
            // time sent here too: then only another size tells that the contents moved on. So did
            // contents the answer shows overtaken by another's write (DECISIONS 302).
            let contentsMovedOn =
                overtaken
                || (record.item.kind == .file && !sent.contains(.contents)
                    && remote.version.content != record.item.version.content
                    && (!sent.contains(.contentModificationDate) || remote.size != record.item.size))
            var identity = try Self.takeRemoteIdentity(
                of: remote, replacing: record, inode: inode, alias: false, keepingContentVersion: contentsMovedOn,
                in: db)
            try Self.finishSending(inode: inode, in: db)
            // The remote said where the item is: no earlier move left it elsewhere.
            try db.cachedStatement(sql: "DELETE FROM sentPlace WHERE inode = ?").execute(arguments: [Int64(inode)])
            let stillPending = overtaken ? stillPending.union(Self.overtakenContents) : stillPending
            if !stillPending.isEmpty { try Self.journal(stillPending, inode: inode, in: db) }
            if !contentsMovedOn {
                identity.modificationDate = try Self.adoptModificationTime(of: remote, inode: inode, in: db)
            }
            try followMove()
            return CompletedSend(identity: identity)
        }
    }

    /// Whether what is at `name` in `folder` on the remote may be an item here: the store knows
    /// `identifier`, or a send of an item here went to that place and is not confirmed (its answer
    /// may be on its way). A deletion that looks for its own item at a place leaves such a one
    /// alone (DECISIONS 317).
    public func mayBeAnItemHere(_ identifier: ItemIdentifier, in folder: ItemIdentifier, as name: Filename)
        async throws -> Bool
    {
        try await database.read { db in
            try Bool.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT 1 FROM item WHERE identifier = ?
                        UNION ALL
                        SELECT 1 FROM sentPlace WHERE parentIdentifier = ? AND filename = ?
                        """),
                arguments: [identifier.rawValue, try Self.resolve(folder, in: db), Data(name.bytes)]) ?? false
        }
    }

    /// Whether the journal will free the name the remote item `identifier` holds in `folder` as
    /// `name`: it is deleted here, or moved here to another name or folder, and the remote has
    /// not heard of it yet. A creation or rename that meets such an item waits under a temporary
    /// name rather than take a conflict name (a swap through a temporary name).
    public func journalFrees(_ identifier: ItemIdentifier, in folder: ItemIdentifier, as name: Filename)
        async throws -> Bool
    {
        try await database.read { db in
            guard
                let record = try ItemRecord.fetchOne(
                    db.cachedStatement(sql: "SELECT * FROM item WHERE identifier = ?"), arguments: [identifier.rawValue]
                )
            else {
                // Unknown here: deleted here, or left by a creation or move whose answer was lost,
                // at a place the item has left since (DECISIONS 290, 314).
                return try Bool.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT 1 FROM pendingDeletion WHERE identifier = ?
                            UNION ALL
                            SELECT 1 FROM sentPlace JOIN item ON item.inode = sentPlace.inode
                            WHERE sentPlace.parentIdentifier = ? AND sentPlace.filename = ?
                              AND \(Self.sentPlaceLeft)
                            """),
                    arguments: [identifier.rawValue, try Self.resolve(folder, in: db), Data(name.bytes)]) ?? false
            }
            let resolvedFolder = try Self.resolve(folder, in: db)
            guard record.item.parentIdentifier.rawValue != resolvedFolder || record.item.filename != name else {
                return false
            }
            guard
                let change = try PendingChange.fetchOne(
                    db.cachedStatement(sql: "SELECT * FROM pendingChange WHERE inode = ?"),
                    arguments: [Int64(record.inode)])
            else { return false }
            return !change.fields.union(change.sending).isDisjoint(with: [.filename, .parentIdentifier])
        }
    }

    /// After a remote whose identifiers are places moved a folder: every identifier that starts
    /// with `oldPrefix` (the folder's old place) starts with `newPrefix` instead, in every table
    /// that names items, whatever the item's parent here is by now (DECISIONS 280). A row that
    /// already held a new identifier gives it up as in `takeRemoteIdentity`: stale, it goes; with
    /// local work, it takes a local identifier and is journalled as a creation (DECISIONS 297).
    private static func rebaseIdentifiers(below oldPrefix: String, onto newPrefix: String, in db: Database) throws {
        guard oldPrefix != newPrefix, let end = Self.end(ofPrefix: oldPrefix),
            let newEnd = Self.end(ofPrefix: newPrefix)
        else { return }
        let taken = try ItemRecord.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM item WHERE identifier >= ? AND identifier < ?"),
            arguments: [newPrefix, newEnd])
        for holder in taken {
            let from = oldPrefix + holder.identifier.rawValue.dropFirst(newPrefix.count)
            guard let taker = try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT inode FROM item WHERE identifier = ?"), arguments: [from])
            else { continue }
            try Self.releaseIdentifier(holder.identifier, except: UInt64(taker), in: db)
        }
        try keepSentContents(from: oldPrefix, upTo: end, in: db)
        let arguments: StatementArguments = [oldPrefix, end, newPrefix]
        for (table, column) in [
            ("item", "identifier"), ("item", "parentIdentifier"), ("pendingDeletion", "identifier"),
            ("pendingDeletion", "parentIdentifier"),
            ("directory", "identifier"), ("content", "identifier"), ("identifierAlias", "remote"),
            ("sentPlace", "parentIdentifier"),
        ] {
            try db.cachedStatement(
                sql: """
                    UPDATE OR REPLACE \(table) SET \(column) = ?3 || substr(\(column), length(?1) + 1)
                    WHERE \(column) >= ?1 AND \(column) < ?2
                    """
            ).execute(arguments: arguments)
        }
        // The items below the new place have the identifiers there now.
        try db.cachedStatement(sql: "DELETE FROM identifierAlias WHERE local >= ?1 AND local < ?2").execute(
            arguments: [newPrefix, Self.end(ofPrefix: newPrefix)])
    }

    /// The least text after every text that starts with `prefix` (its last character moved on by
    /// one), for a range that an index answers; nil for an empty prefix.
    static func end(ofPrefix prefix: String) -> String? {
        var scalars = Array(prefix.unicodeScalars)
        guard let last = scalars.popLast(), let next = Unicode.Scalar(last.value + 1) else { return nil }
        return String(String.UnicodeScalarView(scalars)) + String(next)
    }

    /// Puts the fields being sent back among the pending ones: of one item whose send must be
    /// tried again, or (nil) of every send a stopped daemon left unfinished. Such a send counts
    /// as an attempt: its bytes may have reached the remote, and the next one must recognise
    /// them as its own rather than as a conflict (DECISIONS 173). So does a change (not a
    /// creation, which makes nothing where the name is taken) that met its name taken: its bytes
    /// may have gone up before its rename met the other, and the next attempt, under a conflict
    /// name, took them for another's edit (DECISIONS 301).
    public func requeueSending(inode: UInt64? = nil) async throws {
        try await write { db in
            if let inode {
                try db.cachedStatement(
                    sql: """
                        UPDATE pendingChange SET fields = fields | sending, sending = 0,
                          attempts = attempts + (1 - isCreation),
                          lastError = CASE WHEN isCreation THEN lastError
                            ELSE COALESCE(lastError, 'its name was taken on the remote') END
                        WHERE sending != 0 AND inode = ?
                        """
                ).execute(arguments: [Int64(inode)])
            } else {
                try db.cachedStatement(
                    sql: """
                        UPDATE pendingChange SET fields = fields | sending, sending = 0, attempts = attempts + 1,
                          lastError = COALESCE(lastError, 'interrupted: the daemon stopped while it was sent')
                        WHERE sending != 0
                        """
                ).execute()
            }
        }
    }

    /// The items deleted here whose creation was sent and never confirmed, and whose deletion
    /// waits (`deleteLocally`).
    public func unconfirmedCreationsDeleted() async throws -> Set<ItemIdentifier> {
        let identifiers = try await database.read { db in
            try String.fetchAll(
                db.cachedStatement(sql: "SELECT identifier FROM pendingDeletion WHERE parentIdentifier IS NOT NULL"))
        }
        return Set(identifiers.map { ItemIdentifier($0) }.filter(\.isLocal))
    }

    /// Moves a pending deletion to the end of the journal: it must wait for what is journalled
    /// after it.
    public func postponeDeletion(identifier: ItemIdentifier, sequence: Int64) async throws {
        try await write { db in
            try db.cachedStatement(sql: "UPDATE pendingDeletion SET sequence = ? WHERE identifier = ? AND sequence = ?")
                .execute(arguments: [try Self.nextSequence(in: db), identifier.rawValue, sequence])
        }
    }

    public func completeDeletion(identifier: ItemIdentifier, sequence: Int64) async throws {
        try await write { [ownWrites] db in
            ownWrites.note([identifier])
            if let inode = try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT inode FROM pendingDeletion WHERE identifier = ? AND sequence = ?"),
                arguments: [identifier.rawValue, sequence])
            {
                try Self.keepSentContents(of: inode, at: identifier, in: db)
                try db.cachedStatement(sql: "DELETE FROM sentContent WHERE inode = ?").execute(arguments: [inode])
            }
            try db.cachedStatement(sql: "DELETE FROM pendingDeletion WHERE identifier = ? AND sequence = ?").execute(
                arguments: [identifier.rawValue, sequence])
        }
    }

    /// Counts a failed attempt of a journal entry and keeps its message for `fpfs status`.
    public func recordUploadFailure(of work: PendingWork, message: String) async throws {
        try await write { db in
            switch work {
            case .change(let change, _):
                try db.cachedStatement(
                    sql: """
                        UPDATE pendingChange SET attempts = attempts + 1, lastError = ?, fields = fields | sending,
                        sending = 0 WHERE inode = ?
                        """
                ).execute(arguments: [message, Int64(change.inode)])
            case .deletion(let deletion):
                try db.cachedStatement(
                    sql: "UPDATE pendingDeletion SET attempts = attempts + 1, lastError = ? WHERE identifier = ?"
                ).execute(arguments: [message, deletion.identifier.rawValue])
            }
        }
    }

    // MARK: Local content

    /// Notes that the content of `inode` now lives in the local folder.
    public func markLocalContent(inode: UInt64) async throws {
        try await write { db in try Self.noteLocalContent(inode: inode, in: db) }
    }

    /// Notes that a writer the daemon will not see (the kernel writes its local content itself)
    /// opened the local content of `inode`, which was given the modification time `mark` for it.
    /// Until `clearWriterMark`, a restart that finds another time there journals the contents
    /// (`settleInterruptedWriters`): the writer may have written before the daemon ended.
    public func markWriter(inode: UInt64, modification mark: Timestamp) async throws {
        try await write { db in
            try db.cachedStatement(
                sql: """
                    INSERT INTO localContent (inode, isConflictCopy, writerMark) VALUES (?, 0, ?)
                    ON CONFLICT(inode) DO UPDATE SET writerMark = excluded.writerMark
                    """
            ).execute(arguments: [Int64(inode), mark.nanosecondsSince1970])
        }
    }

    /// The writer `markWriter` noted is gone, its writes saved.
    public func clearWriterMark(inode: UInt64) async throws {
        try await write { db in
            try db.cachedStatement(sql: "UPDATE localContent SET writerMark = NULL WHERE inode = ?").execute(
                arguments: [Int64(inode)])
        }
    }

    /// The marks of writers that were open when the daemon last ended, by inode.
    public func writerMarks() async throws -> [UInt64: Timestamp] {
        try await database.read { db in
            var marks: [UInt64: Timestamp] = [:]
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: "SELECT inode, writerMark FROM localContent WHERE writerMark IS NOT NULL"))
            for row in rows {
                marks[UInt64(row["inode"] as Int64)] = Timestamp(nanosecondsSince1970: row["writerMark"])
            }
            return marks
        }
    }

    /// The size and time the store holds for each item whose journalled change includes its
    /// contents and whose content is local, by inode: a creation or truncation the kernel wrote,
    /// whose close saves nothing (DECISIONS 157), so that a start after kill -9 can take both
    /// from the file.
    public func journalledLocalContents() async throws -> [UInt64: (size: UInt64, modification: Timestamp)] {
        try await database.read { db in
            let records = try ItemRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT item.* FROM item JOIN pendingChange USING (inode) JOIN localContent USING (inode)
                        WHERE pendingChange.fields & ? != 0
                        """),
                arguments: [Int64(ItemFields.contents.rawValue)])
            return Dictionary(
                uniqueKeysWithValues: records.map { ($0.inode, ($0.item.size, $0.item.contentModificationDate)) })
        }
    }

    /// Journals the contents of the items in `written` (local contents a writer changed before the
    /// daemon ended, with their size and time now) and forgets every writer mark.
    public func settleInterruptedWriters(_ written: [UInt64: (size: UInt64, modification: Timestamp)]) async throws {
        try await write { db in
            for (inode, status) in written {
                guard
                    let record = try ItemRecord.fetchOne(
                        db.cachedStatement(sql: "SELECT * FROM item WHERE inode = ?"), arguments: [Int64(inode)])
                else { continue }
                var item = record.item
                item.size = status.size
                item.contentModificationDate = status.modification
                try Self.update(item, from: record.item, inode: inode, in: db)
                try Self.journal([.contents, .contentModificationDate], inode: inode, in: db)
            }
            try db.execute(sql: "UPDATE localContent SET writerMark = NULL WHERE writerMark IS NOT NULL")
        }
    }

    /// The items whose content lives in the local folder, and whether each is a conflict copy.
    public func localContentItems() async throws -> [UInt64: Bool] {
        try await database.read { db in
            var items: [UInt64: Bool] = [:]
            for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT inode, isConflictCopy FROM localContent")) {
                items[UInt64(row["inode"] as Int64)] = row["isConflictCopy"]
            }
            return items
        }
    }

    /// Stores a conflict copy the uploader made on the remote (`remote`), whose content is the
    /// local file the caller moves into place for the returned inode.
    public func insertConflictCopy(_ remote: Item) async throws -> ItemRecord {
        try await write { db in
            let record = try Self.upsert(remote, in: db)
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO localContent (inode, isConflictCopy) VALUES (?, 1)")
                .execute(arguments: [Int64(record.inode)])
            return record
        }
    }

    /// Replaces a local item with the remote's `remote` (the loser of a conflict): its content
    /// leaves the local folder and comes from the block cache again.
    public func replaceWithRemote(inode: UInt64, remote: Item) async throws -> ItemRecord {
        try await write { db in
            var item = remote
            if let record = try ItemRecord.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM item WHERE inode = ?"), arguments: [Int64(inode)])
            {
                item.identifier = record.identifier
                item.parentIdentifier = record.item.parentIdentifier
                item.filename = record.item.filename
                try Self.update(item, from: record.item, inode: inode, in: db)
            }
            try db.cachedStatement(sql: "DELETE FROM localContent WHERE inode = ?").execute(arguments: [Int64(inode)])
            try db.cachedStatement(sql: "DELETE FROM pendingChange WHERE inode = ?").execute(arguments: [Int64(inode)])
            return ItemRecord(inode: inode, item: item)
        }
    }

    /// Forgets the aliases of identifiers replaced during an earlier mount: nothing holds the
    /// old ones any more.
    public func forgetIdentifierAliases() async throws {
        try await write { db in try db.cachedStatement(sql: "DELETE FROM identifierAlias").execute() }
    }

    // MARK: Helpers

    /// The identifier an item has now: a local one the remote has replaced resolves to the
    /// remote's, so an operation that read a record just before the replacement still works.
    static func resolve(_ identifier: ItemIdentifier, in db: Database) throws -> String {
        try String.fetchOne(db.cachedStatement(sql: "SELECT \(resolvedFirst)"), arguments: [identifier.rawValue])
            ?? identifier.rawValue
    }

    /// The identifier of an item's parent: of the folder at inode `folder` as the store names it
    /// now, since a caller that read the folder's identifier before a move of it was confirmed
    /// holds one that names nothing on a remote of places (DECISIONS 299); else `identifier`
    /// through its alias.
    static func parent(_ identifier: ItemIdentifier, folder: UInt64?, in db: Database) throws -> ItemIdentifier {
        if let folder,
            let current = try String.fetchOne(
                db.cachedStatement(sql: "SELECT identifier FROM item WHERE inode = ?"), arguments: [Int64(folder)])
        {
            return ItemIdentifier(current)
        }
        return ItemIdentifier(try resolve(identifier, in: db))
    }

    /// Ends the aliases from `identifiers`, which the remote has just given to items: an alias
    /// from one (the old identifier of an item made here again after the remote deleted it) would
    /// send every read of the new item to the other (DECISIONS 294). The table is empty but for
    /// the creations of this mount, so most calls cost one read.
    static func forgetAliases(from identifiers: some Collection<ItemIdentifier>, in db: Database) throws {
        guard !identifiers.isEmpty,
            try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM identifierAlias)")) ?? false
        else { return }
        for identifier in identifiers {
            try db.cachedStatement(sql: "DELETE FROM identifierAlias WHERE local = ?").execute(arguments: [
                identifier.rawValue
            ])
        }
    }

    static func nextSequence(in db: Database) throws -> Int64 {
        guard
            let sequence = try Int64.fetchOne(
                db.cachedStatement(sql: "UPDATE journalClock SET sequence = sequence + 1 RETURNING sequence"))
        else { throw DatabaseError(message: "the journal clock is missing") }
        return sequence
    }

    /// Writes the columns in which `item` differs from `stored`, the record of `inode` as the store
    /// holds it. SQLite rewrites an index's entry whenever an update sets one of its columns, even
    /// to the same value: a new size or time then costs the table's page alone, where setting
    /// every column wrote the identifier's and the name's index pages too (DECISIONS 119).
    private static func update(_ item: Item, from stored: Item, inode: UInt64, in db: Database) throws {
        let new = try item.columnValues()
        let old = try stored.columnValues()
        var assignments: [String] = []
        var arguments: [DatabaseValue] = []
        for (index, column) in ItemRecord.columns.enumerated() where new[index] != old[index] {
            assignments.append("\(column) = ?")
            arguments.append(new[index])
        }
        guard !assignments.isEmpty else { return }
        arguments.append(Int64(inode).databaseValue)
        try db.cachedStatement(sql: "UPDATE item SET \(assignments.joined(separator: ", ")) WHERE inode = ?")
            .execute(arguments: StatementArguments(values: arguments))
        if item.parentIdentifier != stored.parentIdentifier, try anythingPinned(in: db) {
            try inheritPin(item.identifier, in: db)
        }
    }

    static func journal(_ fields: ItemFields, inode: UInt64, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO pendingChange (inode, sequence, isCreation, fields) VALUES (?, ?, 0, ?)
                ON CONFLICT(inode) DO UPDATE SET sequence = excluded.sequence, fields = fields | excluded.fields
                """
        ).execute(arguments: [Int64(inode), try nextSequence(in: db), Int64(fields.rawValue)])
    }

    private static func noteLocalContent(inode: UInt64, in db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO localContent (inode, isConflictCopy) VALUES (?, 0)").execute(
            arguments: [Int64(inode)])
    }

    /// The item at `inode` takes `remote`'s identifier and version; what pointed at the old
    /// identifier (children, directory state, cached content) follows. With `alias`, the old (local)
    /// identifier keeps resolving to the new one for operations under way.
    /// The remote's modification time for an item it has just taken a write of, unless a newer
    /// time waits in the journal: a remote that keeps its own times (WebDAV's getlastmodified is
    /// the server's clock, in whole seconds) would show it at the next round anyway, as a change
    /// from the remote that dropped the kernel's caches of a file just written.
    private static func adoptModificationTime(of remote: Item, inode: UInt64, in db: Database) throws -> Timestamp? {
        try db.cachedStatement(
            sql: """
                UPDATE item SET modificationDate = ? WHERE inode = ? AND NOT EXISTS
                  (SELECT 1 FROM pendingChange WHERE inode = ? AND (fields & ?) != 0)
                """
        ).execute(arguments: [
            remote.contentModificationDate.nanosecondsSince1970, Int64(inode), Int64(inode),
            Int64(ItemFields.contentModificationDate.rawValue),
        ])
        return db.changesCount > 0 ? remote.contentModificationDate : nil
    }

    /// What a send whose answer holds another's bytes leaves journalled. The remote answers a
    /// write with a look at the item made after it (WebDAV: a PROPFIND after the PUT; the folder
    /// remote: a stat after the write), and a write of another that lands in between is what that
    /// look sees. Taken as the send's own, the store gave the bytes here the other's version: the
    /// mount showed the other's size over these bytes, and they were lost (the checker, seed 15018
    /// on Apache). The item keeps the content version it had, and its contents and time are sent
    /// again against it: that attempt meets the other's write as a conflict and keeps both
    /// (DECISIONS 302).
    private static let overtakenContents: ItemFields = [.contents, .contentModificationDate]

    /// The columns an item takes from the remote's answer to a write of it.
    private static let remoteIdentityColumns = [
        "identifier", "contentVersion", "metadataVersion", "creationDate", "capabilities", "userInfo",
    ]

    private static func takeRemoteIdentity(
        of remote: Item, replacing record: ItemRecord, inode: UInt64, alias: Bool,
        keepingContentVersion: Bool = false, in db: Database
    ) throws -> RemoteIdentity {
        let old = record.identifier
        let identity = RemoteIdentity(
            identifier: remote.identifier,
            version: keepingContentVersion
                ? ItemVersion(content: record.item.version.content, metadata: remote.version.metadata) : remote.version,
            creationDate: remote.creationDate, capabilities: remote.capabilities, userInfo: remote.userInfo)
        try releaseIdentifier(remote.identifier, except: inode, in: db)
        try forgetAliases(from: [remote.identifier], in: db)
        // What only the remote decides comes with the identity: its birth time, what it allows, and
        // the provider's own notes. Left as made here, they differed from the next round's listing,
        // and every creation came back as a remote change (kernel caches dropped for nothing).
        let remoteValues = Dictionary(uniqueKeysWithValues: zip(ItemRecord.columns, try remote.columnValues()))
        let columns = Self.remoteIdentityColumns.filter { !keepingContentVersion || $0 != "contentVersion" }
        try db.cachedStatement(
            sql: "UPDATE item SET " + columns.map { "\($0) = ?" }.joined(separator: ", ") + " WHERE inode = ?"
        ).execute(
            arguments: StatementArguments(
                values: columns.compactMap { remoteValues[$0] } + [Int64(inode).databaseValue]))
        guard remote.identifier != old else { return identity }
        try keepSentContents(of: Int64(inode), at: old, in: db)
        if alias {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO identifierAlias (local, remote) VALUES (?, ?)").execute(
                arguments: [old.rawValue, remote.identifier.rawValue])
        }
        try moveReferences(from: old, to: remote.identifier, in: db)
        return identity
    }

    /// Points what names an item by `old` (its children, their pending deletions, its listing and
    /// cached contents) at `new`, the identifier the item now has.
    private static func moveReferences(from old: ItemIdentifier, to new: ItemIdentifier, in db: Database) throws {
        for table in ["item", "pendingDeletion"] {
            try db.cachedStatement(sql: "UPDATE \(table) SET parentIdentifier = ? WHERE parentIdentifier = ?")
                .execute(arguments: [new.rawValue, old.rawValue])
        }
        for table in ["directory", "content"] {
            try db.cachedStatement(sql: "UPDATE OR REPLACE \(table) SET identifier = ? WHERE identifier = ?").execute(
                arguments: [new.rawValue, old.rawValue])
        }
    }

    /// Takes `identifier` from every item but `inode`'s, since the remote says it is that item
    /// now. A row still holding it is stale, and goes, unless it holds local work: an item kept as
    /// a creation when the remote deleted its own keeps that item's identifier until it is sent,
    /// and on a remote whose identifiers are paths another item can take it first (a file moved
    /// to the name). Deleted, the row took the bytes written here with it (a swap whose file moved
    /// aside was edited; DECISIONS 297). It gets an identifier of its own instead, and stays a
    /// creation.
    private static func releaseIdentifier(_ identifier: ItemIdentifier, except inode: UInt64, in db: Database) throws {
        let holders = try ItemRecord.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM item WHERE identifier = ? AND inode != ?"),
            arguments: [identifier.rawValue, Int64(inode)])
        for holder in holders {
            guard try holdsLocalWork(holder, in: db) else {
                try db.cachedStatement(sql: "DELETE FROM item WHERE inode = ?").execute(arguments: [Int64(holder.inode)])
                continue
            }
            let local = ItemIdentifier.makeLocal()
            try db.cachedStatement(sql: "UPDATE item SET identifier = ? WHERE inode = ?").execute(arguments: [
                local.rawValue, Int64(holder.inode),
            ])
            try moveReferences(from: identifier, to: local, in: db)
            if try pending(holder.inode, in: db)?.isCreation != true { try journalCreation(of: holder, in: db) }
        }
    }

    /// An item deleted here while a send of it was under way: its pending deletion must name what
    /// the send made of it on the remote (its identifier, its version), or it would miss it. With
    /// `keepingContentVersion` (the answer holds another's bytes, `overtakenContents`) the deletion
    /// keeps the version it had: the remote refuses it as a conflict, and the other's file stays.
    /// A round that listed the remote before the answer came learned what the send made as a new
    /// item: the deleted one, shown again (and its name taken) until the deletion was sent. It goes
    /// unless it holds work of its own; were it changed there since, the deletion meets a conflict
    /// and brings it back (DECISIONS 318).
    private static func rebaseDeletion(
        of old: ItemIdentifier, onto remote: Item, keepingContentVersion: Bool, in db: Database
    ) throws -> CompletedSend {
        var completed = CompletedSend()
        let learned = try ItemRecord.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM item WHERE identifier = ?"), arguments: [remote.identifier.rawValue])
        for record in learned where try !holdsWorkOrItems(record, in: db) {
            try forget(record, in: db)
            completed.displaced.append(record)
        }
        try db.cachedStatement(
            sql: """
                UPDATE OR REPLACE pendingDeletion SET identifier = ?,
                  contentVersion = CASE WHEN ? THEN contentVersion ELSE ? END, metadataVersion = ?,
                  parentIdentifier = NULL, filename = NULL
                WHERE identifier = ?
                """
        ).execute(arguments: [
            remote.identifier.rawValue, keepingContentVersion, Data(remote.version.content),
            Data(remote.version.metadata), old.rawValue,
        ])
        return completed
    }

    /// Whether the item of `record` has a change here, local contents, or items in it.
    private static func holdsWorkOrItems(_ record: ItemRecord, in db: Database) throws -> Bool {
        if try pending(record.inode, in: db) != nil || hasLocalContent(record.inode, in: db) { return true }
        return try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM item WHERE parentIdentifier = ? LIMIT 1"),
            arguments: [record.identifier.rawValue]) ?? false
    }

    /// Removes the item of `record` and everything kept for it; with `keepingSentContents`, what
    /// its sends left unconfirmed stays for its deletion (DECISIONS 307).
    static func forget(_ record: ItemRecord, keepingSentContents: Bool = false, in db: Database) throws {
        var deletions = [
            "DELETE FROM pendingChange WHERE inode = ?", "DELETE FROM localContent WHERE inode = ?",
            "DELETE FROM userAttribute WHERE inode = ?", "DELETE FROM item WHERE inode = ?",
            "DELETE FROM sentPlace WHERE inode = ?",
        ]
        if !keepingSentContents { deletions.append("DELETE FROM sentContent WHERE inode = ?") }
        for sql in deletions {
            try db.cachedStatement(sql: sql).execute(arguments: [Int64(record.inode)])
        }
        try db.cachedStatement(sql: "DELETE FROM directory WHERE identifier = ?").execute(arguments: [
            record.identifier.rawValue
        ])
    }

    /// Ends the send of `inode`'s change: what was sent is done; a change made meanwhile stays
    /// pending. What earlier sends left unanswered stays noted (DECISIONS 319): such a send may
    /// still land on the remote, after this one.
    private static func finishSending(inode: UInt64, in db: Database) throws {
        try db.cachedStatement(
            sql: "UPDATE pendingChange SET sending = 0, attempts = 0, lastError = NULL WHERE inode = ?"
        ).execute(arguments: [Int64(inode)])
        try db.cachedStatement(sql: "DELETE FROM pendingChange WHERE inode = ? AND fields = 0 AND isCreation = 0")
            .execute(arguments: [Int64(inode)])
    }
}
