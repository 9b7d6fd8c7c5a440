import FileProviderKit
import MetadataStore
import Testing

@Suite("Pins in the store")
struct PinTests {
    private func item(_ name: String, in parent: String, kind: ItemKind = .file) -> Item {
        Item(
            identifier: ItemIdentifier(name), parentIdentifier: ItemIdentifier(parent), filename: Filename(name),
            kind: kind, version: ItemVersion(content: "1", metadata: "1"))
    }

    @Test("pinning a folder pins what is below it, what arrives later and what moves in; unpinning undoes it")
    func inheritance() async throws {
        let store = try MetadataStore()
        let root = try await store.saveRoot(
            Item(
                identifier: .rootContainer, parentIdentifier: .rootContainer, filename: Filename(""),
                kind: .directory, version: ItemVersion(content: "", metadata: "")))
        let top = ItemIdentifier.rootContainer.rawValue
        let stored = try await store.upsert([
            item("keep", in: top, kind: .directory), item("a", in: "keep"), item("outside", in: top),
        ])
        let (keep, a, outside) = (stored[0].inode, stored[1].inode, stored[2].inode)
        try await store.pin(inode: keep)
        #expect(try await store.isPinned(inode: a))
        #expect(try await !store.isPinned(inode: outside))
        #expect(try await !store.isPinned(inode: root.inode))

        let later = try await store.upsert([item("later", in: "keep")])[0].inode
        #expect(try await store.isPinned(inode: later), "an item listed later in a pinned folder")
        _ = try await store.upsert([item("outside", in: "keep")])
        #expect(try await store.isPinned(inode: outside), "an item moved into a pinned folder")
        #expect(try await store.pinnedRoots() == [keep])
        let expected: Set<ItemIdentifier> = Set(["keep", "a", "later", "outside"].map { ItemIdentifier($0) })
        #expect(try await store.pinnedIdentifiers() == expected)
        let paths = try await store.subtree(of: keep).map { String(decoding: $0.path, as: UTF8.self) }
        #expect(paths == ["", "a", "later", "outside"])

        try await store.unpin(inode: keep)
        for inode in [keep, a, later, outside] { #expect(try await !store.isPinned(inode: inode)) }
    }

    @Test("a listing, a local creation and a local move into a pinned folder are pinned; elsewhere they are not")
    func inheritanceByEveryWrite() async throws {
        let store = try MetadataStore()
        try await store.saveRoot(
            Item(
                identifier: .rootContainer, parentIdentifier: .rootContainer, filename: Filename(""),
                kind: .directory, version: ItemVersion(content: "", metadata: "")))
        let top = ItemIdentifier.rootContainer.rawValue
        let stored = try await store.upsert([
            item("keep", in: top, kind: .directory), item("other", in: top, kind: .directory), item("mover", in: top),
        ])
        let (keep, mover) = (stored[0].inode, stored[2])
        try await store.pin(inode: keep)

        try await store.storeListed([item("listed", in: "keep"), item("elsewhere", in: "other")])
        #expect(
            try await store.isPinned(
                inode: try #require(await store.record(identifier: ItemIdentifier("listed"))).inode))
        #expect(
            try await !store.isPinned(
                inode: try #require(await store.record(identifier: ItemIdentifier("elsewhere"))).inode))

        let made = try #require(await store.insertLocalItem(item("made", in: "keep"), fields: .contents))
        #expect(try await store.isPinned(inode: made.inode))

        #expect(try await !store.isPinned(inode: mover.inode))
        var moved = mover.item
        moved.parentIdentifier = ItemIdentifier("keep")
        try await store.saveLocalChange(moved, inode: mover.inode, fields: .parentIdentifier)
        #expect(try await store.isPinned(inode: mover.inode), "an item moved here into a pinned folder")
    }
}
