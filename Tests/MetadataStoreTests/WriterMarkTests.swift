import FileProviderKit
import MetadataStore
import Testing

@Suite("Writer marks in the store")
struct WriterMarkTests {
    @Test("a mark lasts until cleared; settling journals the written contents only and forgets every mark")
    func marksAreSettled() async throws {
        let store = try MetadataStore()
        _ = try await store.saveRoot(
            Item(
                identifier: .rootContainer, parentIdentifier: .rootContainer, filename: Filename(""),
                kind: .directory, version: ItemVersion(content: "", metadata: "")))
        let files = try await store.upsert(
            ["written", "untouched", "closed"].map { name in
                Item(
                    identifier: ItemIdentifier(name), parentIdentifier: .rootContainer, filename: Filename(name),
                    kind: .file, size: 5, version: ItemVersion(content: "1", metadata: "1"))
            })
        let (written, untouched, closed) = (files[0].inode, files[1].inode, files[2].inode)
        let mark = Timestamp(seconds: 1_700_000_000, nanoseconds: 123_456_789)
        for inode in [written, untouched, closed] { try await store.markWriter(inode: inode, modification: mark) }
        try await store.clearWriterMark(inode: closed)
        #expect(try await store.writerMarks() == [written: mark, untouched: mark])
        #expect(try await store.localContentItems().keys.sorted() == [written, untouched, closed].sorted())

        let later = Timestamp(seconds: 1_700_000_005)
        try await store.settleInterruptedWriters([written: (size: 9, modification: later)])
        #expect(try await store.writerMarks().isEmpty)
        let journalled = try await store.pendingWork(limit: 10).compactMap { work -> UInt64? in
            guard case .change(let change, _) = work, change.fields.contains(.contents) else { return nil }
            return change.inode
        }
        #expect(journalled == [written])
        let record = try #require(try await store.record(inode: written))
        #expect(record.item.size == 9)
        #expect(record.item.contentModificationDate == later)
    }
}
