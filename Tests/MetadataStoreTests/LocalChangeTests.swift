import Foundation
import FileProviderKit
import MetadataStore
import Testing

@Suite("Local changes in the store")
struct LocalChangeTests {
    @Test("a local change writes the columns that differ, and a save that changes none leaves the items alone")
    func localChangeWritesWhatDiffers() async throws {
        let store = try MetadataStore()
        let folder = ItemIdentifier("dir")
        let records = try await store.upsert([
            Item(
                identifier: folder, parentIdentifier: .rootContainer, filename: Filename("dir"), kind: .directory,
                version: ItemVersion(content: "1", metadata: "1")),
            Item(
                identifier: ItemIdentifier("dir/a"), parentIdentifier: folder, filename: Filename("a"),
                kind: .file, size: 1, version: ItemVersion(content: "1", metadata: "1")),
        ])
        let directory = try #require(records.first { $0.identifier == folder })
        let stored = try #require(records.first { $0.identifier != folder })
        var item = stored.item
        item.size = 5
        item.contentModificationDate = Timestamp(seconds: 1_700_000_000)
        let before = store.itemGeneration
        _ = try await store.saveLocalChange(item, inode: stored.inode, fields: [.contents, .contentModificationDate])
        let saved = try #require(try await store.record(inode: stored.inode))
        #expect(saved.item.size == 5 && saved.item.contentModificationDate == item.contentModificationDate)
        #expect(saved.identifier == stored.identifier && saved.item.filename == stored.item.filename)
        #expect(saved.item.version == stored.item.version)
        #expect(store.itemGeneration == before + 1)

        // The same save again: no item column differs, so no item changes; the journal still has it.
        _ = try await store.saveLocalChange(item, inode: stored.inode, fields: .contents)
        #expect(store.itemGeneration == before + 1)
        #expect(try await store.pendingWork(limit: 10).count == 1)

        // A new name is written, and found by it.
        item.filename = Filename("b")
        _ = try await store.saveLocalChange(item, inode: stored.inode, fields: .filename)
        #expect(try await store.child(ofFolder: directory.inode, named: Filename("b"))?.inode == stored.inode)
        #expect(try await store.child(ofFolder: directory.inode, named: Filename("a")) == nil)
    }

    @Test("a folder created here is still found by its local identifier once it has the remote's")
    func readsResolveALocalIdentifierAfterTheCreationIsSent() async throws {
        let store = try MetadataStore()
        let local = ItemIdentifier("fpfs-local-1")
        let folder = try #require(
            try await store.insertLocalItem(
                Item(
                    identifier: local, parentIdentifier: .rootContainer, filename: Filename("new"), kind: .directory,
                    size: 0, version: ItemVersion(content: "", metadata: "")),
                fields: [.contents, .filename]))
        let child = try #require(
            try await store.insertLocalItem(
                Item(
                    identifier: ItemIdentifier("fpfs-local-2"), parentIdentifier: local, filename: Filename("a"),
                    kind: .file, size: 0, version: ItemVersion(content: "", metadata: "")),
                fields: [.contents, .filename]))
        var remote = folder.item
        remote.identifier = ItemIdentifier("/new")
        remote.version = ItemVersion(content: "1", metadata: "1")
        #expect(try await store.completeCreation(inode: folder.inode, localIdentifier: local, remote: remote).identity != nil)
        // Every read of a folder by identifier resolves the old one, in the one statement it runs.
        #expect(try await store.record(identifier: local)?.inode == folder.inode)
        #expect(try await store.listingState(of: local) == .complete)
        #expect(try await store.children(of: local).map(\.inode) == [child.inode])
        #expect(try await store.childEntries(of: local).map(\.inode) == [child.inode])
        #expect(try await store.child(ofFolder: folder.inode, named: Filename("a"))?.inode == child.inode)
        #expect(try store.childNow(ofFolder: folder.inode, named: Filename("a"))?.inode == child.inode)
    }

    /// A caller holds a folder's identifier read before its move was confirmed, which on a remote
    /// of places renames the folder and everything below it (DECISIONS 280, 299).
    @Test("a folder's children are found, and new ones put, by its inode after its move renamed it")
    func childrenOfAFolderWhoseMoveWasConfirmed() async throws {
        let store = try MetadataStore()
        let stored = try await Self.storeFolderWithAFile(in: store)
        let folder = try #require(stored.first { $0.item.kind == .directory })
        let file = try #require(stored.first { $0.item.kind == .file })
        var moved = folder.item
        moved.filename = Filename("e")
        _ = try await store.saveLocalChange(moved, inode: folder.inode, fields: .filename)
        moved.identifier = ItemIdentifier("/e")
        _ = try await store.completeModification(
            inode: folder.inode, previousIdentifier: ItemIdentifier("/d"), remote: moved, movingPrefix: ("/d/", "/e/"))

        #expect(try await store.child(ofFolder: folder.inode, named: Filename("a"))?.inode == file.inode)
        // Made by a caller that read the folder as /d.
        let made = try #require(
            try await store.insertLocalItem(
                Item(
                    identifier: .makeLocal(), parentIdentifier: ItemIdentifier("/d"), filename: Filename("b"),
                    kind: .file, version: ItemVersion(content: [], metadata: [])),
                fields: [.contents, .filename], inFolder: folder.inode))
        #expect(made.item.parentIdentifier == ItemIdentifier("/e"))
        // A truncation by a caller whose copy of the file still names /d keeps the file in /e.
        var truncated = file.item
        truncated.size = 0
        _ = try await store.saveLocalChange(truncated, inode: file.inode, fields: .contents)
        #expect(try await store.record(inode: file.inode)?.item.parentIdentifier == ItemIdentifier("/e"))
        var renamed = file.item
        renamed.filename = Filename("c")
        renamed.parentIdentifier = ItemIdentifier("/d")
        let saved = try await store.saveLocalChange(renamed, inode: file.inode, fields: .filename, inFolder: folder.inode)
        #expect(saved?.item.parentIdentifier == ItemIdentifier("/e"))
        #expect(try await store.children(of: ItemIdentifier("/e")).map(\.inode).sorted() == [file.inode, made.inode].sorted())
    }

    /// An item made again after the remote deleted it keeps the remote's old identifier as an
    /// alias, and a remote that names items by path gives that identifier to a new item sooner or
    /// later (DECISIONS 294).
    @Test("an alias from an identifier the remote gave ends when the remote gives it to another item")
    func anAliasEndsWhenTheRemoteReusesItsIdentifier() async throws {
        let store = try MetadataStore()
        let file = try #require(
            try await store.insertLocalItem(
                Item(
                    identifier: ItemIdentifier("/p/q"), parentIdentifier: .rootContainer, filename: Filename("t~"),
                    kind: .file, size: 0, version: ItemVersion(content: "", metadata: "")),
                fields: [.contents, .filename]))
        var made = file.item
        made.identifier = ItemIdentifier("/p/t~")
        made.version = ItemVersion(content: "1", metadata: "1")
        #expect(try await store.completeCreation(inode: file.inode, localIdentifier: file.identifier, remote: made).identity != nil)
        #expect(try await store.record(identifier: ItemIdentifier("/p/q"))?.inode == file.inode)

        let folder = Item(
            identifier: ItemIdentifier("/p/q"), parentIdentifier: .rootContainer, filename: Filename("q"),
            kind: .directory, size: 0, version: ItemVersion(content: "2", metadata: "2"))
        let stored = try #require(try await store.upsert([folder]).first)
        #expect(stored.inode != file.inode)
        #expect(try await store.record(identifier: ItemIdentifier("/p/q"))?.inode == stored.inode)
        #expect(try await store.record(identifier: ItemIdentifier("/p/t~"))?.inode == file.inode)
    }

    /// An item kept as a creation when the remote deleted its own keeps that one's identifier until
    /// it is sent; on a remote that names items by path, another item moved to that path takes it
    /// first (DECISIONS 297).
    @Test("an item kept as a creation keeps its bytes when another item takes the identifier it had")
    func anItemKeptAsACreationOutlivesItsIdentifier() async throws {
        let store = try MetadataStore()
        let version = ItemVersion(content: "1", metadata: "1")
        let stored = try await store.upsert([
            Item(
                identifier: ItemIdentifier("/a"), parentIdentifier: .rootContainer, filename: Filename("a"), kind: .file,
                size: 1, version: version),
            Item(
                identifier: ItemIdentifier("/q"), parentIdentifier: .rootContainer, filename: Filename("q"), kind: .file,
                size: 1, version: version),
        ])
        let (edited, moved) = (try #require(stored.first { $0.item.filename == Filename("a") }), try #require(stored.first { $0.item.filename == Filename("q") }))
        var item = edited.item
        item.filename = Filename("b")
        item.size = 5
        _ = try await store.saveLocalChange(item, inode: edited.inode, fields: [.contents, .filename])
        _ = try await store.applyRemoteChanges(updated: [], deleted: [ItemIdentifier("/a")]) { _ in true }
        #expect(try await store.record(inode: edited.inode)?.identifier == ItemIdentifier("/a"))

        var renamed = moved.item
        renamed.filename = Filename("a")
        _ = try await store.saveLocalChange(renamed, inode: moved.inode, fields: .filename)
        renamed.identifier = ItemIdentifier("/a")
        renamed.version = ItemVersion(content: "2", metadata: "2")
        #expect(
            try await store.completeModification(inode: moved.inode, previousIdentifier: ItemIdentifier("/q"), remote: renamed)
                != nil)
        #expect(try await store.record(identifier: ItemIdentifier("/a"))?.inode == moved.inode)
        let kept = try #require(try await store.record(inode: edited.inode), "the edited file left the store")
        #expect(kept.identifier.isLocal && kept.item.filename == Filename("b") && kept.item.size == 5)
        #expect(try await Self.creations(in: store) == [edited.inode])
    }

    /// A folder's move by prefix (DECISIONS 280) onto identifiers that another item with local
    /// work still holds: that item keeps its row, as in `anItemKeptAsACreationOutlivesItsIdentifier`.
    @Test("an item with local work outlives a folder's move onto its identifier")
    func anItemWithLocalWorkOutlivesAMoveByPrefix() async throws {
        let store = try MetadataStore()
        let stored = try await Self.storeFolderWithAFile(
            in: store,
            and: [
                Item(
                    identifier: ItemIdentifier("/e/a"), parentIdentifier: .rootContainer, filename: Filename("b"),
                    kind: .file, size: 1, version: ItemVersion(content: "1", metadata: "1"))
            ])
        let moving = try #require(stored.first { $0.item.filename == Filename("a") })
        let edited = try #require(stored.first { $0.item.filename == Filename("b") })
        var item = edited.item
        item.size = 5
        _ = try await store.saveLocalChange(item, inode: edited.inode, fields: .contents)

        try await Self.confirmMove(of: "/d", to: "e", in: store)
        #expect(try await store.record(identifier: ItemIdentifier("/e/a"))?.inode == moving.inode)
        let kept = try #require(try await store.record(inode: edited.inode), "the edited file left the store")
        #expect(kept.identifier.isLocal && kept.item.size == 5)
        #expect(try await Self.creations(in: store) == [edited.inode])
    }

    /// What sends left unanswered stays noted after later sends are confirmed (one of them may
    /// still land on the remote after those), and once the item's deletion is done, under the
    /// remote identifier it had (DECISIONS 307, 319).
    @Test("bytes sent without an answer stay noted after later sends, then under the item's identifier once its deletion is done")
    func sentContentsOutlastLaterSends() async throws {
        let store = try MetadataStore()
        let records = try await Self.storeFolderWithAFile(in: store)
        let file = try #require(records.first { $0.identifier == ItemIdentifier("/d/a") })
        let nowhere = ItemIdentifier("/nowhere")
        let first = SentContent(size: 3, sha256: Data(repeating: 1, count: 32))
        let second = SentContent(size: 4, sha256: Data(repeating: 2, count: 32))
        for sent in [first, first, second] { try await store.noteSentContent(sent, inode: file.inode) }
        try await store.noteSentContent(first, inode: 9_999)
        #expect(Set(try await store.sentContents(inode: file.inode, orAt: nowhere)) == [first, second])
        #expect(try await store.sentContents(inode: 9_999, orAt: nowhere).isEmpty)

        // A send of the contents, confirmed, leaves them noted.
        var edited = file.item
        edited.size = 5
        _ = try await store.saveLocalChange(edited, inode: file.inode, fields: .contents)
        let sending = try #require(try await store.pendingWork(limit: 10).first)
        guard case .change(let edit, _) = sending else { Issue.record("not a change: \(sending)"); return }
        _ = try #require(try await store.beginSending(inode: file.inode, sequence: edit.sequence))
        _ = try await store.completeModification(inode: file.inode, previousIdentifier: file.identifier, remote: edited)
        #expect(Set(try await store.sentContents(inode: file.inode, orAt: nowhere)) == [first, second])
        // A deletion keeps them; done, they are the item's remote identifier's.
        try await store.deleteLocally(inode: file.inode)
        #expect(Set(try await store.sentContents(inode: file.inode, orAt: nowhere)) == [first, second])
        guard case .deletion(let deletion) = try #require(try await store.pendingWork(limit: 10).first) else {
            Issue.record("no deletion journalled")
            return
        }
        #expect(deletion.inode == file.inode)
        try await store.completeDeletion(identifier: deletion.identifier, sequence: deletion.sequence)
        #expect(try await store.sentContents(inode: file.inode, orAt: nowhere).isEmpty)
        #expect(Set(try await store.sentContents(inode: 9_999, orAt: file.identifier)) == [first, second])
    }

    /// What sends left unanswered stays noted under each identifier a move on a remote of places
    /// takes from the item, by its own move or its folder's: another item moved there takes that
    /// identifier, and a late send lands on it (DECISIONS 321).
    @Test("bytes sent without an answer stay noted under the identifiers moves took from the item")
    func sentContentsStayAtIdentifiersMovesLeft() async throws {
        let store = try MetadataStore()
        let records = try await Self.storeFolderWithAFile(in: store)
        let file = try #require(records.first { $0.identifier == ItemIdentifier("/d/a") })
        let sent = SentContent(size: 3, sha256: Data(repeating: 1, count: 32))
        try await store.noteSentContent(sent, inode: file.inode)
        try await Self.confirmMove(of: "/d", to: "e", in: store)
        #expect(try await store.record(inode: file.inode)?.identifier == ItemIdentifier("/e/a"))
        try await Self.confirmMove(of: "/e/a", to: "b", in: store)
        #expect(try await store.record(inode: file.inode)?.identifier == ItemIdentifier("/b"))
        for left in ["/d/a", "/e/a"] {
            #expect(try await store.sentContents(inode: 9_999, orAt: ItemIdentifier(left)) == [sent], "\(left)")
        }
        #expect(try await store.sentContents(inode: 9_999, orAt: ItemIdentifier("/b")).isEmpty)
    }

    /// A round that asked the remote during a folder's move, on a remote whose identifiers are
    /// places, reports the items below it deleted under their old identifiers: once the move is
    /// confirmed, those name nothing (DECISIONS 308; the checker, seed 1796409739 on Apache).
    @Test("a round's deletions under a moved folder's old identifiers, once its move is confirmed, remove nothing")
    func aRoundDuringAFolderMoveRemovesNothingBelowIt() async throws {
        let store = try MetadataStore()
        let stored = try await Self.storeFolderWithAFile(in: store)
        let file = try #require(stored.first { $0.item.kind == .file })
        let mark = store.ownWritesMark()
        try await Self.confirmMove(of: "/d", to: "e", in: store)
        let outcome = try await store.applyRemoteChanges(
            updated: [], deleted: [ItemIdentifier("/d/a")], since: mark, releaseLocalContent: { _ in true })
        #expect(outcome.removed.isEmpty)
        #expect(try await store.record(inode: file.inode)?.identifier == ItemIdentifier("/e/a"))
    }

    /// A file deleted here while its creation was sent: a round that listed the remote before the
    /// answer came learned the file the creation made as a new item, which showed the deleted
    /// file again (and took its name, refusing a mkdir) until the deletion went (the checker, seed
    /// 25011 on Apache; DECISIONS 318). The answer takes it out of the store; a learned item with
    /// a change here stays.
    @Test(
        "a round's item made by a creation deleted here meanwhile goes with the creation's answer",
        arguments: [false, true])
    func aRoundsItemOfADeletedCreationGoes(renamedThere: Bool) async throws {
        let store = try MetadataStore()
        let made = try #require(
            try await store.insertLocalItem(
                Item(
                    identifier: ItemIdentifier("fpfs-local-1"), parentIdentifier: .rootContainer,
                    filename: Filename("a"), kind: .file, size: 0, version: ItemVersion(content: "", metadata: "")),
                fields: [.contents, .filename]))
        let creation = try #require(try await Self.creations(in: store).first)
        let sequence = try #require(try await store.pendingChange(inode: creation)?.sequence)
        _ = try #require(try await store.beginSending(inode: made.inode, sequence: sequence))
        let mark = store.ownWritesMark()
        #expect(try await store.deleteLocally(inode: made.inode))
        var remote = made.item
        remote.identifier = ItemIdentifier("/a")
        remote.version = ItemVersion(content: "1", metadata: "1")
        let outcome = try await store.applyRemoteChanges(
            updated: [remote], deleted: [], since: mark, releaseLocalContent: { _ in true })
        let learned = try #require(outcome.added.first)
        if renamedThere {
            var renamed = learned.item
            renamed.filename = Filename("b")
            _ = try await store.saveLocalChange(renamed, inode: learned.inode, fields: .filename)
        }
        let completed = try await store.completeCreation(
            inode: made.inode, localIdentifier: made.identifier, remote: remote)
        #expect(completed.identity == nil)
        #expect(completed.displaced.map(\.inode) == (renamedThere ? [] : [learned.inode]))
        #expect(try await store.record(identifier: remote.identifier)?.inode == (renamedThere ? learned.inode : nil))
        #expect(!(try await store.children(of: .rootContainer)).contains { $0.item.filename == Filename("a") })
        let deletions = try await store.pendingWork(limit: 10).compactMap { work -> ItemIdentifier? in
            guard case .deletion(let deletion) = work else { return nil }
            return deletion.identifier
        }
        #expect(deletions == [remote.identifier])
    }

    /// Renames the item `identifier` to `name` here and records its move as confirmed by a
    /// remote of places, which names it `/name`.
    static func confirmMove(of identifier: String, to name: String, in store: MetadataStore) async throws {
        let folder = try #require(try await store.record(identifier: ItemIdentifier(identifier)))
        var moved = folder.item
        moved.filename = Filename(name)
        _ = try await store.saveLocalChange(moved, inode: folder.inode, fields: .filename)
        let change = try #require(
            try await store.pendingWork(limit: 10).compactMap { work -> PendingChange? in
                guard case .change(let change, _) = work, change.inode == folder.inode else { return nil }
                return change
            }.first)
        _ = try #require(try await store.beginSending(inode: folder.inode, sequence: change.sequence))
        moved.identifier = ItemIdentifier("/" + name)
        _ = try await store.completeModification(
            inode: folder.inode, previousIdentifier: folder.identifier, remote: moved,
            movingPrefix: (identifier + "/", "/" + name + "/"))
    }

    /// Stores the folder `/d` with the file `/d/a`, and `others`, as a remote of places lists them.
    static func storeFolderWithAFile(in store: MetadataStore, and others: [Item] = []) async throws -> [ItemRecord] {
        let version = ItemVersion(content: "1", metadata: "1")
        return try await store.upsert(
            [
                Item(
                    identifier: ItemIdentifier("/d"), parentIdentifier: .rootContainer, filename: Filename("d"),
                    kind: .directory, version: version),
                Item(
                    identifier: ItemIdentifier("/d/a"), parentIdentifier: ItemIdentifier("/d"),
                    filename: Filename("a"), kind: .file, size: 1, version: version),
            ] + others)
    }

    /// The inodes whose creation the journal holds, in its order.
    static func creations(in store: MetadataStore) async throws -> [UInt64] {
        try await store.pendingWork(limit: 10).compactMap { work -> UInt64? in
            guard case .change(let change, _) = work, change.isCreation else { return nil }
            return change.inode
        }
    }
}
