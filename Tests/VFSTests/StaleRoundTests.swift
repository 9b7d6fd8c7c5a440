import FileProviderKit
import Foundation
import ProviderTesting
import Synchronization
import Testing

/// A remote's answer to a change round that predates an upload ending meanwhile must not undo the
/// upload (DECISIONS 270): git clone into the mount read packs back as empty or unreadable.
@Suite struct StaleRoundTests {
    /// A remote whose working set answers each change enumeration with what the remote held when
    /// it was asked, but only once `release` is called: the round's answer is then older than
    /// whatever the test uploads in between.
    final class LateAnswers: InnerRemote {
        let inner: InMemoryProvider
        private let held = Mutex<CheckedContinuation<Void, Never>?>(nil)
        private let holding = Mutex(false)
        let asked = Mutex(false)

        init(_ inner: InMemoryProvider) { self.inner = inner }

        func holdNextAnswer() { holding.withLock { $0 = true } }
        func release() { held.withLock { $0 }?.resume() }

        fileprivate func wait() async {
            guard holding.withLock({ $0 }) else { return }
            await withCheckedContinuation { continuation in
                held.withLock { $0 = continuation }
                asked.withLock { $0 = true }
            }
            holding.withLock { $0 = false }
        }

        func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator {
            let enumerator = try await inner.enumerator(for: container)
            return container == .workingSet ? Late(inner: enumerator, remote: self) : enumerator
        }

        func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
            async throws -> Item
        {
            try await inner.createItem(basedOn: template, fields: fields, contents: contents, options: options)
        }
        func modifyItem(
            _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?,
            options: ModifyItemOptions
        ) async throws -> Item {
            try await inner.modifyItem(
                item, baseVersion: baseVersion, changedFields: changedFields, contents: contents, options: options)
        }

        struct Late: ItemEnumerator {
            let inner: any ItemEnumerator
            let remote: LateAnswers
            func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage {
                try await inner.enumerateItems(startingAt: page, suggestedPageSize: suggestedPageSize)
            }
            func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
                let batch = try await inner.enumerateChanges(from: anchor, suggestedPageSize: suggestedPageSize)
                await remote.wait()
                return batch
            }
            func currentSyncAnchor() async throws -> SyncAnchor? { try await inner.currentSyncAnchor() }
        }
    }

    /// A file written here, whose next version is uploaded while a round's answer (naming the
    /// version before) is on its way, keeps the uploaded version; so does a file deleted here
    /// meanwhile, which must not come back.
    @Test func aRoundAnsweredBeforeAnUploadEndedLeavesTheUploadAlone() async throws {
        let inner = try InMemoryProvider.docs()
        let remote = LateAnswers(inner)
        let vfs = try await VFSHarness.make(provider: remote, replicatesChanges: true)
        _ = try await vfs.list(try await vfs.resolve("docs").inode)
        _ = try await vfs.fileSystem.replicateChangesNow()

        let file = try await vfs.writeFile("docs/packed.bin", bytes("first"))
        let doomed = try await vfs.writeFile("docs/temporary.bin", bytes("temporary"))
        try await vfs.waitForUploads()
        remote.holdNextAnswer()
        let round = Task { try await vfs.fileSystem.replicateChangesNow() }
        while !remote.asked.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }

        try await vfs.overwrite(file, bytes("the second, longer version"))
        try await vfs.fileSystem.unlink(
            parent: try await vfs.resolve("docs").inode, name: Array("temporary.bin".utf8), context: vfs.context)
        try await vfs.waitForUploads()
        remote.release()
        _ = try await round.value

        let entry = try await vfs.resolve("docs/packed.bin")
        #expect(entry.inode == file)
        #expect(try await vfs.fileSystem.getattr(inode: file, context: vfs.context).attributes.size == 26)
        #expect(try await vfs.readAll(file) == bytes("the second, longer version"))
        let found = try await vfs.resolve("docs/temporary.bin")
        #expect(found.attributes == nil, "temporary.bin came back as inode \(found.inode) (was \(doomed))")
        #expect(try await vfs.list(try await vfs.resolve("docs").inode).contains("temporary.bin") == false)
    }
}
