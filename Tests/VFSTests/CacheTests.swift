import FileProviderKit
import Foundation
import FuseKit
import ProviderTesting
import Testing
import VFS

@Suite("VFS cache: the bound, pins and eviction")
struct CacheTests {
    private static let megabyte = 1 << 20

    private func localBytes(_ vfs: VFSHarness, _ path: String) async throws -> Int {
        Int(try await vfs.xattr(try await vfs.resolve(path).inode, "user.fpfs.local_bytes")) ?? -1
    }

    /// A pinned folder's downloads are read-ahead, and here they hang: they may take every slot
    /// but one, so a read of another file is served at once instead of after the remote bound.
    @Test func hangingDownloadsLeaveASlotForReaders() async throws {
        let remote = InMemoryProvider()
        _ = try remote.addDirectory(path: "keep")
        let injector = FaultInjector()
        var hangs: [FaultInjector.RuleID] = []
        for index in 0..<4 {
            _ = try remote.addFile(path: "keep/f\(index)", contents: Array(repeating: UInt8(index), count: 1000))
            hangs.append(injector.add(FaultRule(.hang, on: .fetch, for: .filename(Filename("f\(index)")))))
        }
        _ = try remote.addFile(path: "other.bin", contents: Array(repeating: 9, count: 1000))
        let vfs = try await VFSHarness.make(
            provider: injector.wrap(remote), remoteTimeout: .seconds(120), pipelineDepth: 2)
        defer { for hang in hangs { injector.remove(hang) } }
        let keep = try await vfs.resolve("keep").inode
        try await vfs.fileSystem.setxattr(
            inode: keep, name: "user.fpfs.pinned", value: bytes("1"), flags: 0, context: vfs.context)
        try await VFSHarness.eventually("the pinned downloads' start") {
            hangs.reduce(0) { $0 + injector.firedCount($1) } >= 1
        }
        let other = try await vfs.resolve("other.bin").inode
        let read = Task { try await vfs.readAll(other) }
        try await VFSHarness.eventually("the other file's read") { try await localBytes(vfs, "other.bin") == 1000 }
        #expect(hangs.reduce(0) { $0 + injector.firedCount($1) } == 1, "read-ahead held one slot of two")
        for hang in hangs { injector.remove(hang) }
        #expect(try await read.value == Array(repeating: 9, count: 1000))
    }

    @Test func readingPastTheBoundEvictsTheLeastRecentlyUsedAndKeepsPins() async throws {
        let remote = InMemoryProvider()
        _ = try remote.addDirectory(path: "keep")
        _ = try remote.addFile(path: "keep/pinned.bin", contents: Array(repeating: 7, count: Self.megabyte))
        for index in 0..<6 {
            _ = try remote.addFile(path: "f\(index)", contents: Array(repeating: UInt8(index), count: Self.megabyte))
        }
        let vfs = try await VFSHarness.make(provider: remote, cacheSize: 3 * UInt64(Self.megabyte))
        let keep = try await vfs.resolve("keep").inode
        try await vfs.fileSystem.setxattr(
            inode: keep, name: "user.fpfs.pinned", value: bytes("1"), flags: 0, context: vfs.context)
        try await VFSHarness.eventually("the pinned folder's download") {
            try await localBytes(vfs, "keep/pinned.bin") == Self.megabyte
        }
        for index in 0..<6 {
            let file = try await vfs.resolve("f\(index)").inode
            #expect(try await vfs.readAll(file) == Array(repeating: UInt8(index), count: Self.megabyte))
            try await Task.sleep(for: .milliseconds(20))
        }
        try await VFSHarness.eventually("eviction down to the bound") {
            var total = try await localBytes(vfs, "keep/pinned.bin")
            for index in 0..<6 { total += try await localBytes(vfs, "f\(index)") }
            return total <= 3 * Self.megabyte
        }
        #expect(try await localBytes(vfs, "keep/pinned.bin") == Self.megabyte, "the pinned file was evicted")
        #expect(try await localBytes(vfs, "f0") == 0, "the least recently used file stayed")
        #expect(try await localBytes(vfs, "f5") == Self.megabyte, "the file read last was evicted")

        // A child made later in the pinned folder inherits the pin; an unpinned file shows 0.
        let new = try await vfs.writeFile("keep/new.txt", bytes("new\n"))
        #expect(try await vfs.xattr(new, "user.fpfs.pinned") == "1")
        #expect(try await vfs.xattr(try await vfs.resolve("f5").inode, "user.fpfs.pinned") == "0")
    }

    @Test func evictFreesCleanCopiesAndRefusesDirtyAndPinnedOnes() async throws {
        let remote = InMemoryProvider()
        _ = try remote.addFile(path: "clean.txt", text: "clean\n")
        let provider = try FaultInjector(spec: "error=serverUnreachable:create:dirty.txt").wrap(remote)
        let vfs = try await VFSHarness.make(provider: provider)
        let clean = try await vfs.resolve("clean.txt").inode
        #expect(try await vfs.readAll(clean) == bytes("clean\n"))
        #expect(try await vfs.xattr(clean, "user.fpfs.state") == "local")
        try await Task.sleep(for: .milliseconds(50))  // the handle's release runs in a task of its own
        let outcome = try await vfs.fileSystem.evict(clean.rawValue)
        #expect(outcome.evicted == 1 && outcome.refused.isEmpty)
        #expect(try await vfs.xattr(clean, "user.fpfs.state") == "cloud")

        // Written here and uploaded: the local copy is clean, so eviction may delete it, and the
        // file then reads the same bytes from the remote.
        let written = try await vfs.writeFile("written.txt", bytes("written here\n"))
        try await VFSHarness.eventually("the upload of written.txt") { remote.item(atPath: "written.txt") != nil }
        try await vfs.waitForUploads(limit: .seconds(2))
        let freed = try await vfs.fileSystem.evict(written.rawValue)
        #expect(freed.evicted == 1 && freed.refused.isEmpty, "\(freed)")
        #expect(try await vfs.xattr(written, "user.fpfs.state") == "cloud")
        #expect(try await vfs.readAll(written) == bytes("written here\n"))

        let dirty = try await vfs.writeFile("dirty.txt", bytes("not on the remote\n"))
        let refused = try await vfs.fileSystem.evict(dirty.rawValue)
        #expect(refused.refused.first?.reason == "has changes not yet on the remote")
        #expect(try await vfs.readAll(dirty) == bytes("not on the remote\n"))

        try await vfs.fileSystem.pin(clean.rawValue)
        // Over, not only complete: the download holds the content until its task ends, and an
        // eviction meanwhile finds it in use (seen under the load of the whole suite).
        try await VFSHarness.eventually("the pinned file's download") {
            let downloading = try await vfs.fileSystem.pinProgress(clean.rawValue).downloading
            return try await vfs.xattr(clean, "user.fpfs.state") == "local" && !downloading
        }
        #expect(try await vfs.fileSystem.evict(clean.rawValue).refused.first?.reason.contains("pinned") == true)
        try await vfs.fileSystem.unpin(clean.rawValue)
        // The fetch that brought the bytes holds the content until its task has ended, a moment
        // after the download is over; until then eviction refuses it as open and changes nothing
        // (seen once under the load of the whole suite).
        try await VFSHarness.eventually("the unpinned file's eviction") {
            try await vfs.fileSystem.evict(clean.rawValue).evicted == 1
        }
        #expect(try await vfs.xattr(clean, "user.fpfs.state") == "cloud")
    }

    @Test func aFileThatAppearsOnTheRemoteInAPinnedFolderIsDownloaded() async throws {
        let remote = InMemoryProvider()
        _ = try remote.addDirectory(path: "keep")
        _ = try remote.addFile(path: "keep/first.txt", text: "first\n")
        let vfs = try await VFSHarness.make(provider: remote, replicatesChanges: true)
        let keep = try await vfs.resolve("keep").inode
        try await vfs.fileSystem.pin(keep.rawValue)
        try await VFSHarness.eventually("the pinned folder's download") {
            try await vfs.fileSystem.pinProgress(keep.rawValue).localFiles == 1
        }
        _ = try remote.addFile(path: "keep/later.txt", text: "later\n")
        _ = try await vfs.fileSystem.replicateChangesNow()
        try await VFSHarness.eventually("the download of the file that appeared later") {
            let progress = try await vfs.fileSystem.pinProgress(keep.rawValue)
            return progress.files == 2 && progress.localFiles == 2
        }
        #expect(try await vfs.xattr(try await vfs.resolve("keep/later.txt").inode, "user.fpfs.pinned") == "1")
    }
}
