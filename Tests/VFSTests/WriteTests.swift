import FileProviderKit
import Foundation
import FuseKit
import ProviderTesting
import Synchronization
import SystemPackage
import Testing
import VFS

@Suite("VFS writes: local first, journalled, replayed by the uploader")
struct WriteTests {
    @Test func createdItemsReachTheRemoteAndKeepTheirInodes() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        let folder = try await vfs.fileSystem.mkdir(
            parent: .root, name: bytes("new"), mode: 0o750, context: vfs.context)
        let file = try await vfs.writeFile("new/a.txt", bytes("alpha\n"))
        // Answered locally, before any upload.
        #expect(try await vfs.readAll(file) == bytes("alpha\n"))
        try await vfs.waitForUploads()
        let uploaded = try #require(remote.item(atPath: "new/a.txt"))
        #expect(remote.contents(of: uploaded.identifier) == bytes("alpha\n"))
        #expect(remote.item(atPath: "new")?.permissions == 0o750)
        #expect(try await vfs.resolve("new/a.txt").inode == file)
        #expect(try await vfs.resolve("new").inode == folder.inode)
        #expect(try await vfs.xattr(file, "user.fpfs.id") == uploaded.identifier.rawValue)
        #expect(try await vfs.xattr(file, "user.fpfs.state") == "local")
    }

    /// Changes wait for the journal to settle: a file made and removed within a burst is never
    /// sent, one kept is sent at `fpfs sync` (retryNow) without waiting out the rest.
    @Test func aBurstIsSentOnceItSettlesAndWhatItRemovedNever() async throws {
        let remote = try InMemoryProvider.docs()
        // Longer than any test runs: nothing goes before retryNow.
        let vfs = try await VFSHarness.make(provider: remote, uploadSettle: .seconds(600))
        let docs = try await vfs.resolve("docs").inode
        _ = try await vfs.writeFile("docs/scratch", bytes("soon gone\n"))
        _ = try await vfs.writeFile("docs/kept", bytes("kept\n"))
        try await vfs.fileSystem.unlink(parent: docs, name: bytes("scratch"), context: vfs.context)
        try await Task.sleep(for: .milliseconds(200))
        #expect(remote.recorder.count(.createItem) == 0, "the journal has not settled")
        try await vfs.waitForUploads()
        #expect(remote.recorder.count(.createItem) == 1)
        #expect(remote.item(atPath: "docs/scratch") == nil)
        #expect(remote.contents(of: try #require(remote.item(atPath: "docs/kept")).identifier) == bytes("kept\n"))
    }

    /// A burst that goes on does not keep its changes back for good: what it made `uploadBurstLag`
    /// ago goes out meanwhile (DECISIONS 117). Each creation takes 2 ms on this remote, and
    /// a change comes every few milliseconds, so the journal never settles while the stream runs;
    /// before 117 only a few sends started per settling period.
    @Test func aLongBurstIsSentAsItGoes() async throws {
        let inner = try InMemoryProvider.docs()
        let remote = FaultInjectingProvider(
            wrapping: inner, injector: FaultInjector(rules: [FaultRule(.delay(.milliseconds(2)), on: .create)]))
        // Settling 20 ms, at most 200 ms; a change waits at most 1 s for the burst to end.
        let vfs = try await VFSHarness.make(
            provider: remote, uploadSettle: .milliseconds(20), uploadBurstLag: .seconds(1))
        let start = ContinuousClock.now
        var madeInFirstSecond: [String] = []
        var count = 0
        while ContinuousClock.now - start < .seconds(5) {
            let name = "docs/f\(count)"
            _ = try await vfs.writeFile(name, bytes("\(count)\n"))
            if ContinuousClock.now - start < .seconds(1) { madeInFirstSecond.append(name) }
            count += 1
            try await Task.sleep(for: .milliseconds(3))
        }
        let sent = madeInFirstSecond.filter { inner.item(atPath: $0) != nil }.count
        #expect(
            sent == madeInFirstSecond.count,
            "\(sent) of the \(madeInFirstSecond.count) files made in the first second reached the remote while the burst went on (\(count) made)"
        )
        try await vfs.waitForUploads()
        #expect(inner.item(atPath: "docs/f\(count - 1)") != nil)
    }

    @Test func aFlushWithNothingToSaveIsAnsweredOnTheSessionThreadAWritersReleaseIsNot() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        let docs = try await vfs.resolve("docs").inode
        let (created, opened) = try await vfs.fileSystem.create(
            parent: docs, name: bytes("new"), mode: 0o644, flags: O_WRONLY, context: vfs.context)
        #expect(vfs.fileSystem.flushNow(inode: created.inode, handle: opened.handle), "nothing written")
        _ = try await vfs.fileSystem.write(
            inode: created.inode, handle: opened.handle, offset: 0, bytes: bytes("x"), context: vfs.context)
        #expect(!vfs.fileSystem.flushNow(inode: created.inode, handle: opened.handle), "a write the task saves")
        try await vfs.fileSystem.flush(inode: created.inode, handle: opened.handle, context: vfs.context)
        #expect(vfs.fileSystem.flushNow(inode: created.inode, handle: opened.handle), "saved")
        #expect(
            !vfs.fileSystem.flushNow(inode: created.inode, handle: FuseKit.FileHandle(opened.handle.rawValue + 1)),
            "an unknown handle goes to the task, which answers EBADF")
        #expect(!vfs.fileSystem.releaseNow(inode: created.inode, handle: opened.handle), "a writer's release saves")
        try await vfs.fileSystem.release(inode: created.inode, handle: opened.handle, flags: 0)
        try await vfs.waitForUploads()
        let item = try #require(remote.item(atPath: "docs/new"))
        #expect(remote.contents(of: item.identifier) == bytes("x"))
    }

    /// Writes after a handle's first are saved at its flush; a lookup before then read the
    /// store's older size, answered it, and the kept record took it: the kernel showed it, and
    /// the flush saved it (the checker, seed 19019: a stat after `mkdir` of the file's name;
    /// DECISIONS 309).
    @Test func aLookupBetweenAWriteAndItsSaveShowsTheWrittenSize() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        let file = try await vfs.resolve("docs/readme.txt").inode
        let opened = try await vfs.fileSystem.open(inode: file, flags: O_RDWR, context: vfs.context)
        for (offset, text) in [(0, "0123456789"), (10, "then thirty more bytes, unsaved")] {
            _ = try await vfs.fileSystem.write(
                inode: file, handle: opened.handle, offset: UInt64(offset), bytes: bytes(text), context: vfs.context)
        }
        #expect(try await vfs.resolve("docs/readme.txt").attributes?.size == 41)
        #expect(try await vfs.fileSystem.getattr(inode: file, context: vfs.context).attributes.size == 41)
        try await vfs.fileSystem.flush(inode: file, handle: opened.handle, context: vfs.context)
        try await vfs.fileSystem.release(inode: file, handle: opened.handle, flags: 0)
        try await vfs.waitForUploads()
        #expect(try await vfs.fileSystem.getattr(inode: file, context: vfs.context).attributes.size == 41)
        #expect(remote.item(atPath: "docs/readme.txt").flatMap { remote.contents(of: $0.identifier) }?.count == 41)
    }

    /// A new file the kernel writes itself (passthrough) has its size saved at its release. The
    /// kernel may forget the inode before the daemon reads that release (a dentry it dropped):
    /// the release applied the size to a copy of the record, saved the store's record instead,
    /// and the file showed size 0 for good (`git clone` on Apache, 1 in about 30: "loose object
    /// … is empty"; DECISIONS 310).
    @Test func aPassthroughWritersSizeIsSavedWhenTheKernelForgotTheFileFirst() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        vfs.fileSystem.attach(PassthroughFilesTests.Registry())
        let docs = try await vfs.resolve("docs").inode
        let (created, opened) = try await vfs.fileSystem.create(
            parent: docs, name: bytes("object"), mode: 0o444, flags: O_WRONLY, context: vfs.context)
        #expect(opened.backing != nil, "the kernel writes a new file itself")
        // What the kernel writes lands in the local content, unseen by the daemon.
        let local = vfs.directory.appendingPathComponent("local/\(created.inode.rawValue)")
        let kernel = try #require(FileHandle(forWritingAtPath: local.path))
        try kernel.write(contentsOf: Data(repeating: 7, count: 28546))
        try kernel.close()
        #expect(vfs.fileSystem.flushNow(inode: created.inode, handle: opened.handle))
        await vfs.fileSystem.forget(inode: created.inode, count: 1)
        try await vfs.fileSystem.release(inode: created.inode, handle: opened.handle, flags: 0)
        #expect(try await vfs.fileSystem.getattr(inode: created.inode, context: vfs.context).attributes.size == 28546)
        try await vfs.waitForUploads()
        #expect(remote.item(atPath: "docs/object")?.size == 28546)
        #expect(try await vfs.resolve("docs/object").attributes?.size == 28546)
    }

    @Test func emptyNewFilesReachTheRemoteEmptyAndLaterBytesFollow() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        let docs = try await vfs.resolve("docs").inode
        // Created and closed without a write, as `touch` does; and made by mknod.
        let (touched, opened) = try await vfs.fileSystem.create(
            parent: docs, name: bytes("touched"), mode: 0o644, flags: O_WRONLY, context: vfs.context)
        try await vfs.fileSystem.flush(inode: touched.inode, handle: opened.handle, context: vfs.context)
        try await vfs.fileSystem.release(inode: touched.inode, handle: opened.handle, flags: 0)
        _ = try await vfs.fileSystem.mknod(
            parent: docs, name: bytes("made"), mode: UInt32(S_IFREG) | 0o644, device: 0, context: vfs.context)
        try await vfs.waitForUploads()
        for name in ["touched", "made"] {
            let item = try #require(remote.item(atPath: "docs/\(name)"))
            #expect(item.kind == .file)
            #expect(remote.contents(of: item.identifier) == [])
        }
        try await vfs.overwrite(touched.inode, bytes("bytes after all\n"))
        try await vfs.waitForUploads()
        let item = try #require(remote.item(atPath: "docs/touched"))
        #expect(remote.contents(of: item.identifier) == bytes("bytes after all\n"))
    }

    /// A file created open counts as being written from the moment its creation is journalled: an
    /// uploader woken at any time in between never sends it empty ahead of its bytes.
    @Test func aFileCreatedOpenIsSentOnceWithItsBytes() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        // Woken from a thread of its own: a loop on the cooperative pool would starve other tests.
        let stop = Mutex(false)
        let waker = Thread { [fileSystem = vfs.fileSystem] in
            while !stop.withLock({ $0 }) {
                fileSystem.retryUploadsNow()
                usleep(20)
            }
        }
        waker.start()
        defer { stop.withLock { $0 = true } }
        for index in 0..<200 { try await vfs.writeFile("docs/f\(index)", bytes("\(index)\n")) }
        try await vfs.waitForUploads()
        #expect(remote.recorder.count(.createItem) == 200)
        #expect(remote.recorder.count(.modifyItem) == 0)
        #expect(remote.contents(of: try #require(remote.item(atPath: "docs/f199")).identifier) == bytes("199\n"))
    }

    @Test func editsRenamesAndDeletionsReachTheRemote() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        let readme = try await vfs.resolve("docs/readme.txt").inode
        try await vfs.overwrite(readme, bytes("changed\n"))
        let docs = try await vfs.resolve("docs").inode
        try await vfs.fileSystem.rename(
            parent: docs, name: bytes("readme.txt"), newParent: .root, newName: bytes("moved.txt"), flags: 0,
            context: vfs.context)
        try await vfs.fileSystem.unlink(parent: docs, name: bytes("other.txt"), context: vfs.context)
        try await vfs.fileSystem.rmdir(parent: .root, name: bytes("docs"), context: vfs.context)
        try await vfs.waitForUploads()
        let moved = try #require(remote.item(atPath: "moved.txt"))
        #expect(remote.contents(of: moved.identifier) == bytes("changed\n"))
        #expect(remote.item(atPath: "docs") == nil)
        #expect(try await vfs.resolve("moved.txt").inode == readme)
        #expect(try await vfs.readAll(readme) == bytes("changed\n"))
    }

    @Test func renameOverAnExistingNameReplacesItUnlessNoReplace() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        let docs = try await vfs.resolve("docs").inode
        await #expect(throws: Errno.fileExists) {
            try await vfs.fileSystem.rename(
                parent: docs, name: bytes("other.txt"), newParent: docs, newName: bytes("readme.txt"), flags: 1,
                context: vfs.context)
        }
        await #expect(throws: Errno.invalidArgument) {
            try await vfs.fileSystem.rename(
                parent: docs, name: bytes("other.txt"), newParent: docs, newName: bytes("readme.txt"), flags: 2,
                context: vfs.context)
        }
        try await vfs.fileSystem.rename(
            parent: docs, name: bytes("other.txt"), newParent: docs, newName: bytes("readme.txt"), flags: 0,
            context: vfs.context)
        try await vfs.waitForUploads()
        let replaced = try #require(remote.item(atPath: "docs/readme.txt"))
        #expect(remote.contents(of: replaced.identifier) == bytes("other\n"))
        #expect(remote.item(atPath: "docs/other.txt") == nil)
    }

    @Test func refusals() async throws {
        let vfs = try await VFSHarness.make(provider: try InMemoryProvider.docs())
        await #expect(throws: Errno.directoryNotEmpty) {
            try await vfs.fileSystem.rmdir(parent: .root, name: Array("docs".utf8), context: vfs.context)
        }
        await #expect(throws: Errno.fileExists) {
            _ = try await vfs.fileSystem.mkdir(
                parent: .root, name: Array("docs".utf8), mode: 0o755, context: vfs.context)
        }
        let readme = try await vfs.resolve("docs/readme.txt").inode
        await #expect(throws: Errno.notPermitted) {
            _ = try await vfs.fileSystem.link(
                inode: readme, newParent: .root, newName: Array("hard".utf8), context: vfs.context)
        }
        await #expect(throws: Errno.isDirectory) {
            try await vfs.fileSystem.unlink(parent: .root, name: Array("docs".utf8), context: vfs.context)
        }
    }

    @Test func changesWaitWhileTheRemoteIsUnreachableAndSurviveARestart() async throws {
        let remote = try InMemoryProvider.docs()
        let injector = FaultInjector()
        let down = injector.add(FaultRule(.error(.serverUnreachable(reason: "test")), on: .create))
        let first = try await VFSHarness.make(provider: injector.wrap(remote))
        let file = try await first.writeFile("offline.txt", bytes("written offline\n"))
        try await Task.sleep(for: .milliseconds(300))
        #expect(remote.item(atPath: "offline.txt") == nil)
        #expect(try await first.fileSystem.uploadQueue().pending == 1)
        #expect(["dirty", "uploading"].contains(try await first.xattr(file, "user.fpfs.state")))
        await first.fileSystem.shutdown()

        injector.remove(down)
        let again = try await VFSHarness.make(provider: injector.wrap(remote), directory: first.directory)
        try await again.waitForUploads()
        let uploaded = try #require(remote.item(atPath: "offline.txt"))
        #expect(remote.contents(of: uploaded.identifier) == bytes("written offline\n"))
        #expect(try await again.resolve("offline.txt").inode == file)
    }

    @Test func aRemoteChangeMeetsALocalEditAsTwoFiles() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        let readme = try await vfs.resolve("docs/readme.txt").inode
        _ = try await vfs.readAll(readme)
        _ = try remote.setContents(path: "docs/readme.txt", bytes("changed on the remote\n"))
        try await vfs.overwrite(readme, bytes("changed here\n"))
        try await vfs.waitForUploads()
        let docs = try await vfs.resolve("docs").inode
        let names = try await vfs.list(docs).filter { $0.hasPrefix("readme") }
        #expect(names.count == 2)
        let copyName = try #require(names.first { $0.contains("(conflict ") })
        #expect(copyName.hasSuffix(".txt"))
        let copy = try await vfs.resolve("docs/" + copyName).inode
        #expect(try await vfs.readAll(copy) == bytes("changed here\n"))
        #expect(try await vfs.xattr(copy, "user.fpfs.state") == "conflict")
        #expect(try await vfs.readAll(readme) == bytes("changed on the remote\n"))
        let remoteCopy = try #require(remote.item(atPath: "docs/" + copyName))
        #expect(remote.contents(of: remoteCopy.identifier) == bytes("changed here\n"))
        let original = try #require(remote.item(atPath: "docs/readme.txt"))
        #expect(remote.contents(of: original.identifier) == bytes("changed on the remote\n"))
    }

    @Test func onlyHandlesThatCannotWriteSkipTheFlush() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        let readme = try await vfs.resolve("docs/readme.txt").inode
        for (flags, skips) in [(O_RDONLY, true), (O_RDWR, false), (O_WRONLY, false), (O_RDONLY | O_TRUNC, false)] {
            let opened = try await vfs.fileSystem.open(inode: readme, flags: flags, context: vfs.context)
            #expect(opened.skipsFlush == skips, "flags \(flags)")
            try await vfs.fileSystem.release(inode: readme, handle: opened.handle, flags: 0)
        }
        let docs = try await vfs.resolve("docs").inode
        let (_, created) = try await vfs.fileSystem.create(
            parent: docs, name: bytes("new"), mode: 0o644, flags: O_WRONLY, context: vfs.context)
        #expect(!created.skipsFlush)
    }

    @Test func truncateAndPartialWritesKeepTheRestOfTheFile() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        let readme = try await vfs.resolve("docs/readme.txt").inode
        let opened = try await vfs.fileSystem.open(inode: readme, flags: O_RDWR, context: vfs.context)
        _ = try await vfs.fileSystem.write(
            inode: readme, handle: opened.handle, offset: 1, bytes: bytes("E"), context: vfs.context)
        _ = try await vfs.fileSystem.setattr(
            inode: readme, changes: AttributeChanges(size: 4), handle: opened.handle, context: vfs.context)
        try await vfs.fileSystem.release(inode: readme, handle: opened.handle, flags: 0)
        #expect(try await vfs.readAll(readme) == bytes("hEll"))
        #expect(try await vfs.fileSystem.getattr(inode: readme, context: vfs.context).attributes.size == 4)
        try await vfs.waitForUploads()
        let uploaded = try #require(remote.item(atPath: "docs/readme.txt"))
        #expect(remote.contents(of: uploaded.identifier) == bytes("hEll"))
    }

    /// A listed file is only counted in memory until it changes (DECISIONS 80): its first write
    /// must take its record from the store, and later writes, getattr and a forget must see the
    /// size the writes made before any flush saved it.
    @Test func aListedFilesSizeFollowsWritesBeforeTheyAreSaved() async throws {
        let vfs = try await VFSHarness.make(provider: try InMemoryProvider.docs())
        let fs = vfs.fileSystem
        let docs = try await vfs.resolve("docs").inode
        #expect(try await vfs.list(docs, plus: true).contains("readme.txt"))
        let readme = try await vfs.resolve("docs/readme.txt").inode
        let opened = try await fs.open(inode: readme, flags: O_WRONLY, context: vfs.context)
        for offset: UInt64 in [100, 200] {
            _ = try await fs.write(
                inode: readme, handle: opened.handle, offset: offset, bytes: bytes("tail"), context: vfs.context)
            #expect(try await fs.getattr(inode: readme, context: vfs.context).attributes.size == offset + 4)
        }
        try await fs.release(inode: readme, handle: opened.handle, flags: 0)
        // Two references: the listing's and the lookup's. Once both go, the store answers.
        await fs.forget(inode: readme, count: 2)
        #expect(try await fs.getattr(inode: readme, context: vfs.context).attributes.size == 204)
        #expect(try await vfs.resolve("docs/readme.txt").inode == readme)
    }

    /// stress-ng's seek stressor: a file created, unlinked while open, then written and read.
    @Test func aFileUnlinkedWhileOpenIsStillWrittenAndRead() async throws {
        let vfs = try await VFSHarness.make(provider: try InMemoryProvider.docs())
        let fs = vfs.fileSystem
        let (entry, opened) = try await fs.create(
            parent: .root, name: bytes("scratch"), mode: 0o644, flags: O_RDWR, context: vfs.context)
        try await fs.unlink(parent: .root, name: bytes("scratch"), context: vfs.context)
        let written = try await fs.write(
            inode: entry.inode, handle: opened.handle, offset: 4096, bytes: bytes("late"), context: vfs.context)
        #expect(written == 4)
        #expect(try await fs.getattr(inode: entry.inode, context: vfs.context).attributes.size == 4100)
        let reply = try await fs.read(
            inode: entry.inode, handle: opened.handle, offset: 4096, size: 4, context: vfs.context)
        #expect(try VFSHarness.bytes(of: reply) == bytes("late"))
        try await fs.release(inode: entry.inode, handle: opened.handle, flags: 0)
    }

    @Test func userAttributesAreKeptAndTheEnginesIgnored() async throws {
        let vfs = try await VFSHarness.make(provider: try InMemoryProvider.docs())
        let readme = try await vfs.resolve("docs/readme.txt").inode
        let fs = vfs.fileSystem
        try await fs.setxattr(inode: readme, name: "user.tag", value: bytes("red"), flags: 0, context: vfs.context)
        #expect(try await vfs.xattr(readme, "user.tag") == "red")
        #expect(try await fs.listxattr(inode: readme, context: vfs.context).contains("user.tag"))
        await #expect(throws: Errno.fileExists) {
            try await fs.setxattr(inode: readme, name: "user.tag", value: [], flags: 1, context: vfs.context)
        }
        await #expect(throws: Errno(rawValue: ENODATA)) {
            try await fs.setxattr(inode: readme, name: "user.other", value: [], flags: 2, context: vfs.context)
        }
        await #expect(throws: Errno.notSupported) {
            try await fs.setxattr(inode: readme, name: "trusted.x", value: [], flags: 0, context: vfs.context)
        }
        try await fs.setxattr(inode: readme, name: "user.fpfs.state", value: bytes("x"), flags: 0, context: vfs.context)
        #expect(try await vfs.xattr(readme, "user.fpfs.state") != "x")
        try await fs.removexattr(inode: readme, name: "user.tag", context: vfs.context)
        await #expect(throws: Errno(rawValue: ENODATA)) {
            try await fs.removexattr(inode: readme, name: "user.tag", context: vfs.context)
        }
    }

    /// An upload's snapshot of a content no one has open is the content's own file by a second
    /// name (DECISIONS 96); an open meanwhile gives the content a copy of its own first, so
    /// writes during the upload reach the next upload, not this one, and readers see them.
    @Test func writesDuringAnUploadWaitForTheNextOne() async throws {
        let remote = HalfwayRemote()
        let vfs = try await VFSHarness.make(provider: remote)
        let before = [UInt8](repeating: 7, count: 3000)
        let file = try await vfs.writeFile("big.bin", before)
        while !remote.isHalfway { try await Task.sleep(for: .milliseconds(10)) }
        let content = vfs.directory.appendingPathComponent("local/\(file.rawValue)").path
        #expect(try links(of: content) == 2)

        let fs = vfs.fileSystem
        let reader = try await fs.open(inode: file, flags: O_RDONLY, context: vfs.context)
        #expect(try links(of: content) == 1)
        let writer = try await fs.open(inode: file, flags: O_WRONLY, context: vfs.context)
        let after = [UInt8](repeating: 9, count: 1000)
        _ = try await fs.write(inode: file, handle: writer.handle, offset: 0, bytes: after, context: vfs.context)
        let read = try await fs.read(inode: file, handle: reader.handle, offset: 0, size: 4096, context: vfs.context)
        let expected = after + before.dropFirst(1000)
        // Compared whole, but printed short on failure.
        #expect(try VFSHarness.bytes(of: read) == expected, "the reader sees the writer's bytes")
        try await fs.flush(inode: file, handle: writer.handle, context: vfs.context)
        try await fs.release(inode: file, handle: writer.handle, flags: 0)
        try await fs.release(inode: file, handle: reader.handle, flags: 0)

        remote.release()
        try await vfs.waitForUploads()
        #expect(remote.sent.first.map { $0 == before } == true, "the creation sends the bytes of its close")
        #expect(remote.sent.last.map { $0 == expected } == true, "the next upload sends the later writes")
        let uploaded = try #require(remote.inner.item(atPath: "big.bin"))
        #expect(remote.inner.contents(of: uploaded.identifier).map { $0 == expected } == true)
    }

    @Test func aChangeFinishesWhenItsCallerIsInterrupted() async throws {
        let vfs = try await VFSHarness.make(provider: try InMemoryProvider.docs())
        let context = vfs.context
        let fs = vfs.fileSystem
        // The kernel's INTERRUPT cancels the request's task; the change must still be made and
        // answered as made, not EINTR.
        let interrupted = Task {
            try await fs.mkdir(parent: .root, name: Array("made".utf8), mode: 0o755, context: context)
        }
        interrupted.cancel()
        let made = try await interrupted.value
        #expect(try await vfs.resolve("made").inode == made.inode)
    }
}

/// How many names the file at `path` has.
private func links(of path: String) throws -> Int {
    var status = stat()
    guard stat(path, &status) == 0 else { throw Errno(rawValue: errno) }
    return Int(status.st_nlink)
}
