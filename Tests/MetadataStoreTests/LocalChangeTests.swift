import FileProviderKit
import MetadataStore
import Testing

@Suite("Local changes in the store")
struct LocalChangeTests {
    @Test("a local change writes the columns that differ, and a save that changes none leaves the items alone")
    func localChangeWritesWhatDiffers() async throws {
        let store = try MetadataStore()
        let folder = ItemIdentifier("dir")
        let stored = try #require(
            try await store.upsert([
                Item(
                    identifier: ItemIdentifier("dir/a"), parentIdentifier: folder, filename: Filename("a"),
                    kind: .file, size: 1, version: ItemVersion(content: "1", metadata: "1"))
            ]).first)
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
        #expect(try await store.child(of: folder, named: Filename("b"))?.inode == stored.inode)
        #expect(try await store.child(of: folder, named: Filename("a")) == nil)
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
        #expect(try await store.completeCreation(inode: folder.inode, localIdentifier: local, remote: remote) != nil)
        // Every read of a folder by identifier resolves the old one, in the one statement it runs.
        #expect(try await store.record(identifier: local)?.inode == folder.inode)
        #expect(try await store.listingState(of: local) == .complete)
        #expect(try await store.children(of: local).map(\.inode) == [child.inode])
        #expect(try await store.childEntries(of: local).map(\.inode) == [child.inode])
        #expect(try await store.child(of: local, named: Filename("a"))?.inode == child.inode)
        #expect(try store.childNow(of: local, named: Filename("a"))?.inode == child.inode)
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
        #expect(try await store.completeCreation(inode: file.inode, localIdentifier: file.identifier, remote: made) != nil)
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
        let creations = try await store.pendingWork(limit: 10).compactMap { work -> UInt64? in
            guard case .change(let change, _) = work, change.isCreation else { return nil }
            return change.inode
        }
        #expect(creations == [edited.inode])
    }
}
