import FileProviderKit
import Foundation
import FuseKit
import ProviderTesting
import Testing
import VFS

/// opendir lets the kernel cache a folder's listing, and keep it exactly while the listing is
/// unchanged, whatever changes it (DECISIONS 76).
@Suite("VFS kernel readdir cache")
struct KernelListingTests {
    /// What opendir answers for `inode`, after which the handle is read to its end (so that the
    /// kernel would have cached the listing) and released; and the names read.
    private func openAndRead(_ vfs: VFSHarness, _ inode: InodeNumber) async throws -> (OpenReply, [String]) {
        let opened = try await vfs.fileSystem.opendir(inode: inode, flags: 0, context: vfs.context)
        var names: [String] = []
        var offset: UInt64 = 0
        while true {
            var buffer = DirectoryBuffer(capacity: 4096, isPlus: false)
            try await vfs.fileSystem.readdir(
                inode: inode, handle: opened.handle, offset: offset, into: &buffer, context: vfs.context)
            guard let last = buffer.items.last else { break }
            names += buffer.items.map { String(decoding: $0.name, as: UTF8.self) }
            offset = last.nextOffset
        }
        try await vfs.fileSystem.releasedir(inode: inode, handle: opened.handle)
        return (opened, names)
    }

    @Test func anUnchangedListingIsKeptAndAChangedOneDropped() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        let docs = try await vfs.resolve("docs").inode

        let (first, names) = try await openAndRead(vfs, docs)
        #expect(first.cacheDirectory)
        #expect(!first.keepCache, "nothing cached yet")
        let (second, again) = try await openAndRead(vfs, docs)
        #expect(second.cacheDirectory && second.keepCache)
        #expect(again == names)

        // A change through the mount: the kernel drops the listing, and caches the new one.
        try await vfs.writeFile("docs/new.txt", Array("new\n".utf8))
        let (afterCreate, withNew) = try await openAndRead(vfs, docs)
        #expect(!afterCreate.keepCache)
        #expect(withNew.contains("new.txt"))
        #expect(try await openAndRead(vfs, docs).0.keepCache)

        // A change to another folder moves the store's items but not this listing: kept.
        try await vfs.writeFile("other.txt", Array("x".utf8))
        #expect(try await openAndRead(vfs, docs).0.keepCache)
    }

    @Test func aKeptListingIsOpenedAndReleasedOnTheSessionThread() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        let docs = try await vfs.resolve("docs").inode
        #expect(vfs.fileSystem.opendirNow(inode: docs) == nil, "nothing cached yet: the task reads the listing")
        _ = try await openAndRead(vfs, docs)
        let kept = try #require(vfs.fileSystem.opendirNow(inode: docs))
        #expect(kept.keepCache && kept.cacheDirectory)
        var buffer = DirectoryBuffer(capacity: 4096, isPlus: false)
        #expect(
            !vfs.fileSystem.readdirNow(inode: docs, handle: kept.handle, offset: 0, into: &buffer)
                && buffer.items.isEmpty,
            "a kept listing's handle has read nothing: the task reads it")
        try await vfs.fileSystem.readdir(
            inode: docs, handle: kept.handle, offset: 0, into: &buffer, context: vfs.context)
        #expect(!buffer.items.isEmpty, "the handle reads the listing should the kernel ask")
        #expect(vfs.fileSystem.releasedirNow(inode: docs, handle: kept.handle))

        try await vfs.writeFile("docs/new.txt", Array("new\n".utf8))
        #expect(vfs.fileSystem.opendirNow(inode: docs) == nil, "a changed folder is compared by the task")
        let (reply, names) = try await openAndRead(vfs, docs)
        #expect(!reply.keepCache && names.contains("new.txt"))
        #expect(vfs.fileSystem.opendirNow(inode: docs)?.keepCache == true)
    }

    @Test func aListedFolderTheKernelHoldsNothingOfIsOpenedAndReadOnTheSessionThread() async throws {
        let remote = try InMemoryProvider.docs()
        for index in 0...FileSystem.childrenReadOnSessionThread { _ = try remote.addFile(path: "long/f\(index)") }
        let vfs = try await VFSHarness.make(provider: remote)
        let docs = try await vfs.resolve("docs").inode
        _ = try await vfs.resolve("docs/readme.txt")  // lists docs, as listing ahead would

        let opened = try #require(vfs.fileSystem.opendirNow(inode: docs))
        #expect(opened.cacheDirectory && !opened.keepCache)
        var names: [String] = []
        var offset: UInt64 = 0
        while true {
            var buffer = DirectoryBuffer(capacity: 200, isPlus: true)  // one entry at a time
            #expect(vfs.fileSystem.readdirNow(inode: docs, handle: opened.handle, offset: offset, into: &buffer))
            guard let last = buffer.items.last else { break }
            names += buffer.items.map { String(decoding: $0.name, as: UTF8.self) }
            offset = last.nextOffset
        }
        #expect(names == [".", "..", "other.txt", "readme.txt"])
        #expect(vfs.fileSystem.releasedirNow(inode: docs, handle: opened.handle))
        #expect(try await openAndRead(vfs, docs).0.keepCache, "the kernel keeps what the session thread gave it")

        let long = try await vfs.resolve("long").inode
        _ = try await vfs.resolve("long/f0")
        #expect(vfs.fileSystem.opendirNow(inode: long) == nil, "a long listing is read by the task")
        #expect(try await vfs.list(long).count == FileSystem.childrenReadOnSessionThread + 3)
    }

    @Test func aRemoteChangeDropsTheCachedListing() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote, replicatesChanges: true)
        let docs = try await vfs.resolve("docs").inode
        _ = try await openAndRead(vfs, docs)
        #expect(try await openAndRead(vfs, docs).0.keepCache)

        _ = try remote.addFile(path: "docs/from-remote.txt", text: "remote\n")
        _ = try await vfs.fileSystem.replicateChangesNow()
        let (reply, names) = try await openAndRead(vfs, docs)
        #expect(!reply.keepCache)
        #expect(names.contains("from-remote.txt"))
    }

    @Test func aHandleOpenedBeforeAChangeMakesTheCacheUnknown() async throws {
        let remote = try InMemoryProvider.docs()
        let vfs = try await VFSHarness.make(provider: remote)
        let docs = try await vfs.resolve("docs").inode
        _ = try await openAndRead(vfs, docs)
        let old = try await vfs.fileSystem.opendir(inode: docs, flags: 0, context: vfs.context)
        var buffer = DirectoryBuffer(capacity: 64, isPlus: false)  // room for "." only
        try await vfs.fileSystem.readdir(
            inode: docs, handle: old.handle, offset: 0, into: &buffer, context: vfs.context)
        try await vfs.writeFile("docs/new.txt", Array("new\n".utf8))
        // The kernel refills from a new handle at offset 0, then reads on with the old handle.
        let new = try await vfs.fileSystem.opendir(inode: docs, flags: 0, context: vfs.context)
        #expect(!new.keepCache)
        buffer = DirectoryBuffer(capacity: 4096, isPlus: false)
        try await vfs.fileSystem.readdir(
            inode: docs, handle: new.handle, offset: 0, into: &buffer, context: vfs.context)
        buffer = DirectoryBuffer(capacity: 4096, isPlus: false)
        try await vfs.fileSystem.readdir(
            inode: docs, handle: old.handle, offset: 2, into: &buffer, context: vfs.context)
        try await vfs.fileSystem.releasedir(inode: docs, handle: old.handle)
        try await vfs.fileSystem.releasedir(inode: docs, handle: new.handle)
        #expect(!(try await openAndRead(vfs, docs).0.keepCache), "the cache may hold both listings")
    }
}
