import FileProviderKit
import GRDB
import Testing

@testable import MetadataStore

@Suite("Listings in the store")
struct ListingStoreTests {
    private func item(_ name: String, in parent: String = "dir", size: UInt64 = 0) -> Item {
        Item(
            identifier: ItemIdentifier(parent + "/" + name), parentIdentifier: ItemIdentifier(parent),
            filename: Filename(name), kind: .file, size: size, version: ItemVersion(content: "1", metadata: "1"))
    }

    @Test("identifiers are ordered by their UTF-8 bytes, as SQLite orders TEXT")
    func bytewiseOrder() {
        #expect(MetadataStore.bytewisePrecedes("a", "b"))
        #expect(MetadataStore.bytewisePrecedes("a", "ab"), "a prefix comes first")
        #expect(!MetadataStore.bytewisePrecedes("ab", "a"))
        #expect(!MetadataStore.bytewisePrecedes("a", "a"))
        #expect(MetadataStore.bytewisePrecedes("", "a"))
        #expect(MetadataStore.bytewisePrecedes("Z", "a"), "uppercase ASCII before lowercase")
        // U+00E9 is C3 A9 in UTF-8, after every ASCII byte; Swift's own String order agrees here
        // but not for every pair (it compares canonical equivalents equal).
        #expect(MetadataStore.bytewisePrecedes("z", "\u{E9}"))
        #expect(MetadataStore.bytewisePrecedes("e\u{301}", "\u{E9}"), "decomposed and composed forms differ")
        #expect(!MetadataStore.bytewisePrecedes("\u{E9}", "e\u{301}"))
    }

    /// A listing that finds a file whose bytes live here at another content version leaves its
    /// record alone and returns it, to be applied as a round would: stored, the record took the
    /// remote's version under the bytes here (the checker, seed 30014 on Apache; DECISIONS 320).
    @Test("a listing leaves a file with local contents at another version to be applied as a round would")
    func listingLeavesLocalContentsOfAnotherVersion() async throws {
        let store = try MetadataStore()
        let records = try await LocalChangeTests.storeFolderWithAFile(
            in: store, and: [item("b", in: "/d", size: 1)])
        let file = try #require(records.first { $0.identifier == ItemIdentifier("/d/a") })
        let other = try #require(records.first { $0.identifier == ItemIdentifier("/d/b") })
        try await store.markLocalContent(inode: file.inode)
        var changed = file.item
        changed.version = ItemVersion(content: "2", metadata: "2")
        changed.size = 7
        var otherChanged = other.item
        otherChanged.version = ItemVersion(content: "2", metadata: "2")
        otherChanged.size = 7
        let left = try await store.storeListed(
            [changed, otherChanged],
            completing: .init(directory: ItemIdentifier("/d"), seen: [changed.identifier, otherChanged.identifier]))
        #expect(left == [file.identifier])
        #expect(try await store.record(inode: file.inode)?.item.version == file.item.version)
        #expect(try await store.record(inode: other.inode)?.item.size == 7, "one without local contents is stored")
        let journal = try await store.journalState()
        let replaced = try await store.replaceListing(
            of: ItemIdentifier("/d"), with: [changed, otherChanged], ifJournalAt: journal.sequence)
        #expect(replaced == [file.identifier])
        #expect(try await store.record(inode: file.inode)?.item.version == file.item.version)
        #expect(try await store.children(of: ItemIdentifier("/d")).count == 2)
    }

    @Test("a listing stored over several transactions keeps every item and leaves local changes alone")
    func splitListing() async throws {
        let store = try MetadataStore()
        _ = try await store.saveRoot(
            Item(
                identifier: .rootContainer, parentIdentifier: .rootContainer, filename: Filename(""),
                kind: .directory, version: ItemVersion(content: "", metadata: "")))
        // A local creation holds the name "held"; the listing's item of that name must not take it.
        var held = item("held")
        held.identifier = ItemIdentifier("made-here-1")
        let local = try #require(try await store.insertLocalItem(held, fields: .contents))

        let names = ["q", "b", "\u{E9}t\u{E9}", "a", "held", "z", "m", "c"]
        try await store.storeListed(names.map { item($0, size: 1) }, transactionSize: 3)
        let children = try await store.children(of: ItemIdentifier("dir"))
        #expect(children.map(\.item.filename.description).sorted() == names.sorted())
        let kept = try #require(children.first { $0.item.filename == Filename("held") })
        #expect(kept.inode == local.inode && kept.item.size == 0, "the local item keeps its name")

        // Listing again (one transaction) keeps each item's inode.
        let before = Dictionary(uniqueKeysWithValues: children.map { ($0.identifier, $0.inode) })
        try await store.storeListed(names.reversed().map { item($0, size: 2) })
        let again = try await store.children(of: ItemIdentifier("dir"))
        #expect(again.allSatisfy { before[$0.identifier] == $0.inode })
        #expect(again.filter { $0.item.filename != Filename("held") }.allSatisfy { $0.item.size == 2 })
    }

    @Test("items stored many to a statement keep every column, their inodes, and their order among upserts")
    func rowsPerStatement() async throws {
        let store = try MetadataStore()
        let count = MetadataStore.rowsPerStore * 2 + 16 + 4 + 3  // every statement size
        var items = (0..<count).map { item("f\($0)", size: UInt64($0)) }
        items[70].extendedAttributes = ["user.tag": Array("x".utf8)]
        items[3].creationDate = Timestamp(nanosecondsSince1970: 1_234_567_891)
        items[4].userInfo = ["etag": "\"e4\""]
        items[5].symlinkTarget = Array("../t".utf8)
        items[6].version = ItemVersion(content: "", metadata: "")
        items[count - 1].version = ItemVersion(content: "", metadata: "")
        try await store.storeListed(items, transactionSize: count)
        let stored = try await store.children(of: ItemIdentifier("dir"))
        let byIdentifier = Dictionary(uniqueKeysWithValues: stored.map { ($0.identifier, $0) })
        #expect(stored.count == count)
        for item in items {
            var expected = item
            expected.extendedAttributes = nil
            var got = try #require(byIdentifier[item.identifier]?.item)
            got.extendedAttributes = nil
            #expect(got == expected)
        }
        #expect(
            try await store.userAttribute(
                inode: try #require(byIdentifier[items[70].identifier]).inode, name: "user.tag") != nil)

        // Stored again, changed: every item keeps its inode and takes its new values.
        try await store.storeListed(
            items.map {
                var changed = $0; changed.size += 1000; return changed
            })
        let again = try await store.children(of: ItemIdentifier("dir"))
        #expect(again.allSatisfy { byIdentifier[$0.identifier]?.inode == $0.inode && $0.item.size >= 1000 })
    }

    @Test("a listing's last run ends it in its last transaction: vanished children go, the folder is complete")
    func completingListing() async throws {
        let store = try MetadataStore()
        let folder = ItemIdentifier("dir")
        let first = ["a", "b", "c", "d"].map { item($0) }
        try await store.storeListed(first)
        #expect(try await store.listingState(of: folder) != .complete)

        let second = ["a", "c", "e"].map { item($0) }
        try await store.storeListed(
            second, transactionSize: 2, completing: .init(directory: folder, seen: Set(second.map(\.identifier))))
        #expect(try await store.children(of: folder).map(\.item.filename.description).sorted() == ["a", "c", "e"])
        #expect(try await store.listingState(of: folder) == .complete)

        // An empty listing still ends, and empties the folder.
        let empty = ItemIdentifier("dir/empty")
        try await store.storeListed([item("x", in: "dir/empty")])
        try await store.storeListed([], completing: .init(directory: empty, seen: []))
        #expect(try await store.children(of: empty).isEmpty)
        #expect(try await store.listingState(of: empty) == .complete)
    }

    @Test("a folder's child entries are its children's inodes, names and kinds, in the same order")
    func childEntries() async throws {
        let store = try MetadataStore()
        var folder = item("sub")
        folder.kind = .directory
        try await store.storeListed([item("b"), folder, item("a"), item("\u{E9}")])
        let children = try await store.children(of: ItemIdentifier("dir"))
        let entries = try await store.childEntries(of: ItemIdentifier("dir"))
        #expect(entries.map(\.inode) == children.map(\.inode))
        #expect(entries.map(\.filename) == children.map(\.item.filename.bytes))
        #expect(entries.map(\.kind) == children.map(\.item.kind))
        #expect(entries.compactMap(\.folderIdentifier) == [ItemIdentifier("dir/sub")], "identifiers of folders only")
        #expect(try await store.childEntries(of: ItemIdentifier("nothing")).isEmpty)
    }

    @Test("storing a folder's listing changes only its children: other folders' listings are known unchanged")
    func listingsConfinedToTheirFolder() async throws {
        let store = try MetadataStore()
        func folder(_ name: String) -> Item {
            var folder = item(name, in: "root")
            folder.kind = .directory
            return folder
        }
        try await store.storeListed([folder("a"), folder("b")])
        let a = try #require(try await store.record(identifier: ItemIdentifier("root/a"))).inode
        let b = try #require(try await store.record(identifier: ItemIdentifier("root/b"))).inode
        let listed = ItemIdentifier("root/a")
        try await store.storeListed(
            [item("1", in: "root/a")], completing: .init(directory: listed, seen: [ItemIdentifier("root/a/1")]))
        let readA = store.itemGeneration

        // b's listing, over two transactions, and its end: nothing of a's.
        let listedB = ["1", "2", "3"].map { item($0, in: "root/b") }
        try await store.storeListed(
            listedB, transactionSize: 2,
            completing: .init(directory: ItemIdentifier("root/b"), seen: Set(listedB.map(\.identifier))))
        #expect(store.itemGeneration == readA + 2)
        #expect(store.itemGeneration(unchangedUnder: a, since: readA) == readA + 2)
        #expect(store.itemGeneration(unchangedUnder: b, since: readA) == nil)
        #expect(store.itemGeneration(unchangedUnder: a, since: readA + 2) == readA + 2, "nothing since")

        // a listed again with a vanished child: a's children changed.
        try await store.storeListed([], completing: .init(directory: listed, seen: []))
        #expect(store.itemGeneration(unchangedUnder: a, since: readA) == nil)
        #expect(store.itemGeneration(unchangedUnder: b, since: readA + 2) == readA + 3)

        // An item updated in place may have moved from any folder: nothing is known unchanged.
        let beforeUpdate = store.itemGeneration
        try await store.storeListed([item("1", in: "root/b", size: 9)])
        #expect(store.itemGeneration(unchangedUnder: a, since: beforeUpdate) == nil)

        // Items of two folders in one listing, or of a folder the store does not know: the same.
        let beforeMixed = store.itemGeneration
        try await store.storeListed([item("4", in: "root/b"), item("2", in: "root/a")])
        #expect(store.itemGeneration(unchangedUnder: a, since: beforeMixed) == nil)
        let beforeUnknown = store.itemGeneration
        try await store.storeListed([item("x", in: "root/elsewhere")])
        #expect(store.itemGeneration(unchangedUnder: a, since: beforeUnknown) == nil)

        // A change made here is not a listing's either.
        let beforeLocal = store.itemGeneration
        var made = item("made", in: "root/b")
        made.identifier = ItemIdentifier("made-here-1")
        _ = try await store.insertLocalItem(made, fields: .contents)
        #expect(store.itemGeneration(unchangedUnder: a, since: beforeLocal) == nil)
    }

    @Test("what each commit changed is remembered for a bounded number of commits")
    func confinementsAreForgotten() throws {
        let database = try DatabaseQueue()
        try database.write { db in try db.execute(sql: "CREATE TABLE item (inode INTEGER PRIMARY KEY)") }
        let counter = ItemChangeCounter(rememberedCommits: 3)
        database.add(transactionObserver: counter, extent: .databaseLifetime)
        func insert(confinedTo folder: UInt64?) throws {
            try database.write { db in
                if let folder { counter.confineTransaction(toChildrenOf: folder) }
                try db.execute(sql: "INSERT INTO item DEFAULT VALUES")
            }
        }
        try insert(confinedTo: 7)
        #expect(counter.unchangedChildren(of: 1, since: 0) == 1)
        #expect(counter.unchangedChildren(of: 7, since: 0) == nil)
        // A transaction that changes no item does not count.
        try database.write { db in try db.execute(sql: "CREATE TABLE other (x)") }
        #expect(counter.count == 1)
        for _ in 0..<6 { try insert(confinedTo: 7) }
        #expect(counter.count == 7)
        #expect(counter.unchangedChildren(of: 1, since: 0) == nil, "the first commits are forgotten")
        #expect(counter.unchangedChildren(of: 1, since: 4) == 7)
        try insert(confinedTo: nil)
        #expect(counter.unchangedChildren(of: 1, since: 7) == nil)
        #expect(counter.unchangedChildren(of: 1, since: 8) == 8)
    }
}
