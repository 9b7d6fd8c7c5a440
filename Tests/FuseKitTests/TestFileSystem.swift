import Foundation
import FuseKit
import Synchronization
import SystemPackage

/// Foundation has a FileHandle too; in this module the name means FuseKit's.
typealias FileHandle = FuseKit.FileHandle

/// A small read-mostly tree served from memory, with counters that let tests see what the
/// kernel asked for:
///
///     /hello.txt   bytes (xattr user.note)      /big.bin   served as a file range
///     /link -> hello.txt                        /many/     1000 files
///     /sink        accepts writes               /boom      lookup throws a non-Errno error
///     xattr user.slow on any file waits until the request is interrupted
final class TestFileSystem: FileSystemOperations {
    static let hello = InodeNumber(2)
    static let big = InodeNumber(3)
    static let link = InodeNumber(4)
    static let many = InodeNumber(5)
    static let sink = InodeNumber(6)
    /// big.bin's bytes, made once: a closure per byte costs a debug build most of a second, and
    /// every test mounts a file system of its own.
    private static let bigPattern = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
    static let manyCount = 1000
    static let note = [UInt8](repeating: UInt8(ascii: "n"), count: 300)

    struct Counters {
        var readdirCalls = 0
        var readdirplusCalls = 0
        var largestWrite = 0
        var shutdowns = 0
        var slowCalls = 0
        var cancelledCalls = 0
        var helloSize: UInt64 = 0
        var bigReads = 0
    }

    /// Everything mutable, so tests can read counters while requests run.
    let counters: Mutex<Counters>
    let helloBytes: [UInt8]
    let bigBytes: [UInt8]
    let bigFile: TestFile
    /// Where opens of big.bin register it as their backing file (FUSE passthrough), once set.
    let backingFiles = Mutex<(any BackingFileRegistry)?>(nil)
    private let timeout = Duration.seconds(60)

    init(directory: URL) throws {
        helloBytes = Array("hello, fuse\n".utf8)
        bigBytes = Self.bigPattern
        bigFile = try TestFile(path: directory.appendingPathComponent("big.bin").path, contents: bigBytes)
        counters = Mutex(Counters(helloSize: UInt64(helloBytes.count)))
    }

    func initialize(settings: inout ConnectionSettings) {
        settings.passthrough = true
    }

    func shutdown() async {
        counters.withLock { $0.shutdowns += 1 }
    }

    private func attributes(_ inode: InodeNumber) -> FileAttributes? {
        let now = FileTime(seconds: 1_700_000_000)
        func file(_ type: FuseKit.FileType, _ size: UInt64, _ permissions: UInt16 = 0o644) -> FileAttributes {
            FileAttributes(
                inode: inode, type: type, permissions: permissions, size: size, blocks: (size + 511) / 512,
                accessTime: now, modificationTime: now, changeTime: now)
        }
        switch inode {
        case .root, Self.many: return file(.directory, 0, 0o755)
        case Self.hello: return file(.regular, counters.withLock { $0.helloSize })
        case Self.big: return file(.regular, UInt64(bigBytes.count))
        case Self.link: return file(.symlink, 9, 0o777)
        case Self.sink: return file(.regular, 0)
        case let other where (1000..<1000 + UInt64(Self.manyCount)).contains(other.rawValue): return file(.regular, 1)
        default: return nil
        }
    }

    private func children(_ directory: InodeNumber) throws -> [(name: String, inode: InodeNumber)] {
        switch directory {
        case .root:
            return [
                ("hello.txt", Self.hello), ("big.bin", Self.big), ("link", Self.link), ("many", Self.many),
                ("sink", Self.sink),
            ]
        case Self.many:
            return (0..<Self.manyCount).map { (String(format: "file-%04d", $0), InodeNumber(1000 + UInt64($0))) }
        default:
            throw Errno.notDirectory
        }
    }

    private func entry(_ inode: InodeNumber) throws -> Entry {
        guard let attributes = attributes(inode) else { throw Errno.noSuchFileOrDirectory }
        return Entry(attributes: attributes, attributeTimeout: timeout, entryTimeout: timeout)
    }

    struct Boom: Error {}

    func lookup(parent: InodeNumber, name: [UInt8], context: RequestContext) async throws -> Entry {
        let name = String(decoding: name, as: UTF8.self)
        if parent == .root && name == "boom" { throw Boom() }
        guard let child = try children(parent).first(where: { $0.name == name }) else {
            return .negative(timeout: timeout)
        }
        return try entry(child.inode)
    }

    /// Waits far longer than any test, unless the kernel interrupts the request.
    private func waitForInterrupt() async throws {
        counters.withLock { $0.slowCalls += 1 }
        do {
            try await Task.sleep(for: .seconds(30))
        } catch {
            counters.withLock { $0.cancelledCalls += 1 }
            throw error
        }
    }

    func forget(inode: InodeNumber, count: UInt64) async {}

    func getattr(inode: InodeNumber, context: RequestContext) async throws -> AttributesReply {
        guard let attributes = attributes(inode) else { throw Errno.noSuchFileOrDirectory }
        return AttributesReply(attributes: attributes, timeout: timeout)
    }

    func readlink(inode: InodeNumber, context: RequestContext) async throws -> [UInt8] {
        guard inode == Self.link else { throw Errno.invalidArgument }
        return Array("hello.txt".utf8)
    }

    func open(inode: InodeNumber, flags: Int32, context: RequestContext) async throws -> OpenReply {
        if flags & O_ACCMODE != O_RDONLY && inode != Self.sink { throw Errno.readOnlyFileSystem }
        if inode == Self.big, let registry = backingFiles.withLock({ $0 }) {
            let backing = try registry.register(FileDescriptor(rawValue: bigFile.fileDescriptor))
            return OpenReply(handle: FileHandle(inode.rawValue), backing: backing)
        }
        return OpenReply(handle: FileHandle(inode.rawValue))
    }

    func read(inode: InodeNumber, handle: FileHandle, offset: UInt64, size: Int, context: RequestContext)
        async throws -> ReadReply
    {
        if inode == Self.big { counters.withLock { $0.bigReads += 1 } }
        let bytes = inode == Self.big ? bigBytes : inode == Self.hello ? helloBytes : []
        let start = min(Int(offset), bytes.count)
        let length = min(size, bytes.count - start)
        if inode == Self.big {
            return .fileRange(file: bigFile, offset: UInt64(start), length: length)
        }
        return .bytes(Array(bytes[start..<start + length]))
    }

    func write(inode: InodeNumber, handle: FileHandle, offset: UInt64, bytes: [UInt8], context: RequestContext)
        async throws -> Int
    {
        guard inode == Self.sink else { throw Errno.readOnlyFileSystem }
        counters.withLock { $0.largestWrite = max($0.largestWrite, bytes.count) }
        return bytes.count
    }

    func flush(inode: InodeNumber, handle: FileHandle, context: RequestContext) async throws {}
    func release(inode: InodeNumber, handle: FileHandle, flags: Int32) async throws {}

    func opendir(inode: InodeNumber, flags: Int32, context: RequestContext) async throws -> OpenReply {
        OpenReply(handle: FileHandle(inode.rawValue))
    }

    func readdir(
        inode: InodeNumber, handle: FileHandle, offset: UInt64, into buffer: inout DirectoryBuffer,
        context: RequestContext
    ) async throws {
        let isPlus = buffer.isPlus
        counters.withLock { isPlus ? ($0.readdirplusCalls += 1) : ($0.readdirCalls += 1) }
        for (index, child) in try children(inode).enumerated().dropFirst(Int(offset)) {
            guard
                buffer.append(
                    name: Array(child.name.utf8), entry: try entry(child.inode), nextOffset: UInt64(index + 1))
            else { return }
        }
    }

    func releasedir(inode: InodeNumber, handle: FileHandle) async throws {}

    func statfs(inode: InodeNumber) async throws -> FileSystemStatistics {
        FileSystemStatistics(
            blockSize: 4096, totalBlocks: 1000, freeBlocks: 600, availableBlocks: 500, totalFiles: 100,
            freeFiles: 50)
    }

    func access(inode: InodeNumber, mask: Int32, context: RequestContext) async throws {}

    func getxattr(inode: InodeNumber, name: String, context: RequestContext) async throws -> [UInt8] {
        if name == "user.slow" { try await waitForInterrupt() }
        guard inode == Self.hello && name == "user.note" else { throw Errno.noData }
        return Self.note
    }

    func listxattr(inode: InodeNumber, context: RequestContext) async throws -> [String] {
        inode == Self.hello ? ["user.note"] : []
    }
}
