import FileProviderKit
import Foundation
import ProviderTesting
import Synchronization
import Testing
import VFS

/// An upload's progress, as a provider reports it through `UploadProgress`, reaches `fpfs status`
/// (the statistics' uploads in flight), and the bytes count as sent once it ends.
@Suite("VFS upload progress")
struct UploadProgressTests {
    /// A remote that reports half of each file's contents sent, then waits for `release`.
    final class HalfwayRemote: FileProvider {
        let inner = InMemoryProvider()
        private let gate = Mutex<CheckedContinuation<Void, Never>?>(nil)
        private let reached = Mutex(false)

        var isHalfway: Bool { reached.withLock { $0 } }

        func release() { gate.withLock { $0 }?.resume() }

        func item(for identifier: ItemIdentifier) async throws -> Item { try await inner.item(for: identifier) }
        func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator {
            try await inner.enumerator(for: container)
        }
        func fetchContents(for identifier: ItemIdentifier, version: ItemVersion?, into sink: any ContentSink)
            async throws -> Item
        {
            try await inner.fetchContents(for: identifier, version: version, into: sink)
        }
        func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
            async throws -> Item
        {
            if let contents { UploadProgress.reporter(for: contents)?(template.size / 2) }
            await withCheckedContinuation { continuation in
                gate.withLock { $0 = continuation }
                reached.withLock { $0 = true }
            }
            return try await inner.createItem(basedOn: template, fields: fields, contents: contents, options: options)
        }
        func modifyItem(
            _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?,
            options: ModifyItemOptions
        ) async throws -> Item {
            try await inner.modifyItem(
                item, baseVersion: baseVersion, changedFields: changedFields, contents: contents, options: options)
        }
        func deleteItem(identifier: ItemIdentifier, baseVersion: ItemVersion?, options: DeleteItemOptions) async throws
        {
            try await inner.deleteItem(identifier: identifier, baseVersion: baseVersion, options: options)
        }
        func invalidate() async {}
    }

    @Test func anUploadShowsItsProgressAndCountsWhenDone() async throws {
        let remote = HalfwayRemote()
        let vfs = try await VFSHarness.make(provider: remote)
        try await vfs.writeFile("big.bin", [UInt8](repeating: 7, count: 1000))
        while !remote.isHalfway { try await Task.sleep(for: .milliseconds(10)) }

        let during = vfs.fileSystem.statisticsSnapshot
        #expect(during.uploading.map(\.name) == ["big.bin"])
        #expect(during.uploading.first?.sent == 500)
        #expect(during.uploading.first?.length == 1000)
        #expect(during.uploads.bytes == 500)

        remote.release()
        try await vfs.waitForUploads()
        // The counters follow the journal by a moment: the entry leaves it before the send ends.
        var after = vfs.fileSystem.statisticsSnapshot
        for _ in 0..<200 where after.uploads.sent == 0 {
            try await Task.sleep(for: .milliseconds(10))
            after = vfs.fileSystem.statisticsSnapshot
        }
        #expect(after.uploading.isEmpty)
        // Each send of the contents counts them whole (the journal may send a file twice when a
        // write lands while its creation is under way).
        #expect(after.uploads.sent >= 1)
        #expect(after.uploads.bytes == 1000 * UInt64(after.uploads.sent))
    }
}
