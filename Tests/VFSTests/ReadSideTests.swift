import FileProviderKit
import Foundation
import FuseKit
import ProviderTesting
import SystemPackage
import Testing
import VFS

@Suite("VFS read side, in-process against InMemoryProvider")
struct ReadSideTests {
    private func makeRemote(pageSize: Int? = nil) throws -> InMemoryProvider {
        let remote = InMemoryProvider(configuration: .init(pageSize: pageSize))
        _ = try remote.addDirectory(path: "docs")
        _ = try remote.addFile(path: "docs/readme.txt", text: "hello\n")
        _ = try remote.addFile(path: "docs/empty", contents: [])
        _ = try remote.addFile(path: "big.bin", contents: ConformanceFixture.pattern(count: 3_000_000, seed: 31))
        _ = try remote.addSymlink(path: "link", target: "docs/readme.txt")
        for index in 0..<250 { _ = try remote.addFile(path: "many/file-\(index)", text: "\(index)") }
        return remote
    }

    @Test func listingMatchesTheRemoteAndFetchesNoContent() async throws {
        let remote = try makeRemote(pageSize: 7)
        let vfs = try await VFSHarness.make(provider: remote)
        let rootNames = try await vfs.list(.root)
        #expect(rootNames == [".", "..", "big.bin", "docs", "link", "many"])
        let many = try await vfs.resolve("many")
        let names = try await vfs.list(many.inode, plus: true, bufferSize: 1024)
        #expect(names.count == 252)
        #expect(Set(names.dropFirst(2)) == Set((0..<250).map { "file-\($0)" }))
        #expect(remote.recorder.count(.fetchContents) == 0)
        #expect(remote.recorder.count(.fetchPartialContents) == 0)
    }

    @Test func aListedDirectoryIsAnsweredFromTheStore() async throws {
        let remote = try makeRemote()
        let vfs = try await VFSHarness.make(provider: remote)
        _ = try await vfs.resolve("docs/readme.txt")
        let pages = remote.recorder.count(.enumerateItems)
        _ = try await vfs.resolve("docs/empty")
        let missing = try await vfs.fileSystem.lookup(
            parent: try await vfs.resolve("docs").inode, name: Array("nope".utf8), context: vfs.context)
        #expect(missing.inode.rawValue == 0, "a missing name in a listed directory is a negative entry")
        #expect(remote.recorder.count(.enumerateItems) == pages)
    }

    @Test func lookupsAndGetattrsAreAnsweredOnTheSessionThread() async throws {
        let remote = try makeRemote()
        let vfs = try await VFSHarness.make(provider: remote, listingAheadDepth: 0)
        let docs = try await vfs.resolve("docs")
        #expect(
            vfs.fileSystem.lookupNow(parent: docs.inode, name: Array("readme.txt".utf8)) == nil,
            "a folder not listed yet is left to the task, which lists it")
        #expect(vfs.fileSystem.lookupNow(parent: .root, name: Array("docs".utf8)) == docs)
        _ = try await vfs.resolve("docs/readme.txt")
        let pages = remote.recorder.count(.enumerateItems)
        let readme = try #require(vfs.fileSystem.lookupNow(parent: docs.inode, name: Array("readme.txt".utf8)))
        #expect(readme == (try await vfs.resolve("docs/readme.txt")))
        let missing = try #require(vfs.fileSystem.lookupNow(parent: docs.inode, name: Array("nope".utf8)))
        #expect(missing.inode.rawValue == 0, "a missing name is a negative entry")
        #expect(vfs.fileSystem.lookupNow(parent: readme.inode, name: Array("x".utf8)) == nil, "not a folder")
        #expect(vfs.fileSystem.getattrNow(inode: readme.inode)?.attributes == readme.attributes)
        #expect(vfs.fileSystem.getattrNow(inode: InodeNumber(999_999)) == nil, "an unknown inode goes to the task")
        #expect(remote.recorder.count(.enumerateItems) == pages)
    }

    @Test func readOnlyOpensOfColdFilesAndTheirReleasesAreAnsweredOnTheSessionThread() async throws {
        let remote = try makeRemote()
        let vfs = try await VFSHarness.make(provider: remote)
        let readme = try await vfs.resolve("docs/readme.txt")
        let fileSystem = vfs.fileSystem
        #expect(fileSystem.openNow(inode: readme.inode, flags: O_RDWR, context: vfs.context) == nil, "a writer")
        #expect(fileSystem.openNow(inode: readme.inode, flags: O_RDONLY | O_TRUNC, context: vfs.context) == nil)
        let docs = try await vfs.resolve("docs")
        #expect(fileSystem.openNow(inode: docs.inode, flags: O_RDONLY, context: vfs.context) == nil, "a folder")
        let opened = try #require(fileSystem.openNow(inode: readme.inode, flags: O_RDONLY, context: vfs.context))
        #expect(opened.skipsFlush)
        #expect(remote.recorder.count(.fetchContents) + remote.recorder.count(.fetchPartialContents) == 0)
        let reply = try await fileSystem.read(
            inode: readme.inode, handle: opened.handle, offset: 0, size: 1 << 20, context: vfs.context)
        #expect(
            try VFSHarness.bytes(of: reply) == remote.contents(of: remote.item(atPath: "docs/readme.txt")!.identifier))
        #expect(fileSystem.releaseNow(inode: readme.inode, handle: opened.handle), "nothing to save")
        #expect(!fileSystem.releaseNow(inode: readme.inode, handle: opened.handle), "released already")
        #expect(
            fileSystem.openNow(inode: readme.inode, flags: O_RDONLY, context: vfs.context) == nil,
            "a file with cached bytes has its cache file opened by the task")
    }

    @Test func attributesAndSymlinks() async throws {
        let remote = try makeRemote()
        let vfs = try await VFSHarness.make(provider: remote)
        let big = try await vfs.resolve("big.bin")
        #expect(big.attributes?.size == 3_000_000)
        #expect(big.attributes?.type == .regular)
        // One block while bytes are only on the remote, so that `tar -S` reads it (DECISIONS 191).
        #expect(big.attributes?.blocks == 1)
        let link = try await vfs.resolve("link")
        #expect(link.attributes?.type == .symlink)
        let target = try await vfs.fileSystem.readlink(inode: link.inode, context: vfs.context)
        #expect(String(decoding: target, as: UTF8.self) == "docs/readme.txt")
        let docs = try await vfs.resolve("docs")
        #expect(docs.attributes?.type == .directory)
    }

    @Test func readsReturnTheRemoteBytesAndChangeTheState() async throws {
        let remote = try makeRemote()
        let vfs = try await VFSHarness.make(provider: WholeFileProvider(inner: remote))
        let big = try await vfs.resolve("big.bin")
        #expect(try await vfs.xattr(big.inode, "user.fpfs.state") == "cloud")
        let opened = try await vfs.fileSystem.open(inode: big.inode, flags: O_RDONLY, context: vfs.context)
        #expect(remote.recorder.count(.fetchContents) == 0, "open never downloads")
        try await vfs.fileSystem.release(inode: big.inode, handle: opened.handle, flags: 0)
        let bytes = try await vfs.readAll(big.inode)
        #expect(bytes == remote.contents(of: remote.item(atPath: "big.bin")!.identifier))
        #expect(try await vfs.xattr(big.inode, "user.fpfs.state") == "local")
        #expect(try await vfs.xattr(big.inode, "user.fpfs.local_bytes") == "3000000")
        let attributes = try await vfs.fileSystem.getattr(inode: big.inode, context: vfs.context).attributes
        #expect(attributes.blocks == (3_000_000 + 511) / 512)
        _ = try await vfs.readAll(big.inode)
        #expect(remote.recorder.count(.fetchContents) == 1, "a second read is served locally")
    }

    @Test func concurrentReadersShareOneFetch() async throws {
        let remote = try makeRemote()
        remote.configuration.fetchDelay = .milliseconds(200)
        let vfs = try await VFSHarness.make(provider: WholeFileProvider(inner: remote))
        let big = try await vfs.resolve("big.bin")
        let expected = remote.contents(of: remote.item(atPath: "big.bin")!.identifier)!
        try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<4 { group.addTask { try await vfs.readAll(big.inode) } }
            for try await bytes in group { #expect(bytes == expected) }
        }
        #expect(remote.recorder.count(.fetchContents) == 1)
    }

    @Test func inodesAndCachedContentSurviveARestart() async throws {
        let remote = try makeRemote()
        let first = try await VFSHarness.make(provider: WholeFileProvider(inner: remote))
        let before = try await first.resolve("docs/readme.txt").inode
        _ = try await first.readAll(before)
        await first.fileSystem.shutdown()
        let again = try await VFSHarness.make(provider: WholeFileProvider(inner: remote), directory: first.directory)
        let after = try await again.resolve("docs/readme.txt").inode
        #expect(before == after)
        #expect(try await again.xattr(after, "user.fpfs.state") == "local")
        #expect(try await again.readAll(after) == Array("hello\n".utf8))
        #expect(remote.recorder.count(.fetchContents) == 1)
    }

    @Test func aReadOnlyMountRefusesWritesWithEROFS() async throws {
        let vfs = try await VFSHarness.make(provider: try makeRemote(), readOnly: true)
        let file = try await vfs.resolve("docs/readme.txt")
        await #expect(throws: Errno.readOnlyFileSystem) {
            _ = try await vfs.fileSystem.open(inode: file.inode, flags: O_WRONLY, context: vfs.context)
        }
        await #expect(throws: Errno.readOnlyFileSystem) {
            _ = try await vfs.fileSystem.mkdir(parent: .root, name: Array("x".utf8), mode: 0o755, context: vfs.context)
        }
        await #expect(throws: Errno.readOnlyFileSystem) {
            try await vfs.fileSystem.unlink(parent: .root, name: Array("big.bin".utf8), context: vfs.context)
        }
    }

    @Test func unknownNamesAndAttributes() async throws {
        let vfs = try await VFSHarness.make(provider: try makeRemote())
        await #expect(throws: Errno.notDirectory) { _ = try await vfs.resolve("docs/readme.txt/x") }
        let file = try await vfs.resolve("docs/readme.txt")
        await #expect(throws: Errno(rawValue: ENODATA)) { _ = try await vfs.xattr(file.inode, "user.other") }
        // Not supported, so that `ls -l` stops asking for labels and ACLs after the first file.
        for name in ["security.selinux", "system.posix_acl_access"] {
            await #expect(throws: Errno(rawValue: EOPNOTSUPP)) { _ = try await vfs.xattr(file.inode, name) }
        }
        let names = try await vfs.fileSystem.listxattr(inode: file.inode, context: vfs.context)
        #expect(names.contains("user.fpfs.state") && names.contains("user.fpfs.id"))
    }
}
