import FileProviderKit
import Foundation
import FuseKit
import ProviderTesting
import Synchronization
import Testing
import VFS

/// The remote's changes against local work, in-process: local changes are never overwritten by
/// the remote's, and an expired anchor is a full comparison, not an error (ARCHITECTURE §5).
@Suite("VFS remote changes")
struct RemoteChangeTests {
    /// Opens `inode` for writing and writes `text`, leaving the handle open (so no upload starts).
    private func beginWriting(_ vfs: VFSHarness, _ inode: InodeNumber, _ text: String) async throws
        -> FuseKit.FileHandle
    {
        let opened = try await vfs.fileSystem.open(inode: inode, flags: O_WRONLY | O_TRUNC, context: vfs.context)
        _ = try await vfs.fileSystem.write(
            inode: inode, handle: opened.handle, offset: 0, bytes: bytes(text), context: vfs.context)
        return opened.handle
    }

    @Test func aFileChangedHereAndThereKeepsBoth() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote, replicatesChanges: true)
        let readme = try await vfs.resolve("docs/readme.txt").inode
        #expect(try await vfs.readAll(readme) == bytes("hello\n"))
        let handle = try await beginWriting(vfs, readme, "local edit\n")
        _ = try remote.setContents(path: "docs/readme.txt", bytes("remote edit\n"))

        _ = try await vfs.fileSystem.replicateChangesNow()
        // The local edit stands; the remote's waits for the uploader's conflict path.
        #expect(try await vfs.readAll(readme) == bytes("local edit\n"))
        try await vfs.fileSystem.release(inode: readme, handle: handle, flags: 0)
        try await vfs.waitForUploads()

        let names = try await vfs.list(try await vfs.resolve("docs").inode).filter { $0.hasPrefix("readme") }
        #expect(names.count == 2, "\(names)")
        let copy = try #require(names.first { $0.contains("conflict") })
        #expect(try await vfs.readAll(try await vfs.resolve("docs/\(copy)").inode) == bytes("local edit\n"))
        #expect(try await vfs.readAll(readme) == bytes("remote edit\n"))
        #expect(
            remote.contents(of: try #require(remote.item(atPath: "docs/\(copy)")).identifier) == bytes("local edit\n"))
    }

    /// The open after a lookup takes the record that lookup read (DECISIONS 89), unless a change
    /// came in between: then the open reads the changed one.
    @Test func aFileChangedBetweenItsLookupAndItsOpenOpensTheNewVersion() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote, replicatesChanges: true)
        let readme = try await vfs.resolve("docs/readme.txt").inode
        _ = try remote.setContents(path: "docs/readme.txt", bytes("changed on the remote\n"))
        _ = try await vfs.fileSystem.replicateChangesNow()

        #expect(try await vfs.readAll(readme) == bytes("changed on the remote\n"))
        let other = try await vfs.resolve("docs/other.txt").inode
        let otherItem = try #require(remote.item(atPath: "docs/other.txt"))
        #expect(try await vfs.readAll(other) == remote.contents(of: otherItem.identifier))
    }

    @Test func aFolderDeletedRemotelyKeepsWhatWasWrittenInIt() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote, replicatesChanges: true)
        let docs = try await vfs.resolve("docs").inode
        let (entry, opened) = try await vfs.fileSystem.create(
            parent: docs, name: bytes("draft.txt"), mode: 0o644, flags: O_WRONLY, context: vfs.context)
        _ = try await vfs.fileSystem.write(
            inode: entry.inode, handle: opened.handle, offset: 0, bytes: bytes("draft\n"), context: vfs.context)
        try remote.remove(path: "docs")

        _ = try await vfs.fileSystem.replicateChangesNow()
        // The clean files went with the folder; the new one and its folder stay.
        #expect(try await vfs.list(docs) == [".", "..", "draft.txt"])
        try await vfs.fileSystem.release(inode: entry.inode, handle: opened.handle, flags: 0)
        try await vfs.waitForUploads()
        let draft = try #require(remote.item(atPath: "docs/draft.txt"))
        #expect(remote.contents(of: draft.identifier) == bytes("draft\n"))
        #expect(remote.item(atPath: "docs/readme.txt") == nil)
        #expect(try await vfs.resolve("docs").inode == docs)
    }

    @Test func anExpiredAnchorComparesEverything() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote, replicatesChanges: true)
        #expect(try await vfs.list(try await vfs.resolve("docs").inode) == [".", "..", "other.txt", "readme.txt"])
        _ = try await vfs.fileSystem.replicateChangesNow()
        let comparisons = vfs.fileSystem.statisticsSnapshot.replication.fullComparisons

        _ = try remote.move(path: "docs/other.txt", to: "docs/renamed.txt")
        _ = try remote.addFile(path: "docs/new.txt", text: "new\n")
        remote.trimChangeLog()
        #expect(try await vfs.fileSystem.replicateChangesNow() >= 2)

        #expect(vfs.fileSystem.statisticsSnapshot.replication.fullComparisons == comparisons + 1)
        #expect(
            try await vfs.list(try await vfs.resolve("docs").inode) == [
                ".", "..", "new.txt", "readme.txt", "renamed.txt",
            ])
    }

    /// The daemon wakes its heap trimmer at the end of a round (DECISIONS 135): a failed round
    /// ends too.
    @Test func everyRoundTellsItsEndWhateverItsOutcome() async throws {
        let remote = try InMemoryProvider.docs()
        let injector = FaultInjector()
        let ended = Mutex(0)
        let vfs = try await VFSHarness.make(
            provider: injector.wrap(remote), replicatesChanges: true, changeRoundEnded: { ended.withLock { $0 += 1 } })
        _ = try await vfs.fileSystem.replicateChangesNow()
        let before = ended.withLock { $0 }
        #expect(before >= 1)

        _ = try remote.addFile(path: "docs/new.txt", text: "new\n")
        _ = try await vfs.fileSystem.replicateChangesNow()
        #expect(ended.withLock { $0 } == before + 1)

        _ = injector.add(FaultRule(.error(.serverUnreachable(reason: "test")), on: .enumerate))
        await #expect(throws: (any Error).self) { try await vfs.fileSystem.replicateChangesNow() }
        #expect(ended.withLock { $0 } == before + 2)
    }
}
