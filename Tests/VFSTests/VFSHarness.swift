import BlockCache
import FileProviderKit
import Foundation
import FuseKit
import Logging
import MetadataStore
import ProviderTesting
import SystemPackage
import Testing
import VFS

/// A FileSystem over a given provider with its store and cache in a temporary folder, driven
/// in-process through the same methods FuseKit calls.
struct VFSHarness {
    let fileSystem: FileSystem
    let directory: URL
    let context = RequestContext(uid: 0, gid: 0, pid: getpid())

    static func make(
        provider: any FileProvider, directory: URL? = nil, remoteTimeout: Duration = .seconds(5),
        pipelineDepth: Int = 8, nonMaterializing: Set<String> = [], readOnly: Bool = false,
        replicatesChanges: Bool = false, cacheSize: UInt64? = nil,
        listingAheadDepth: Int = VFSConfiguration().listingAheadDepth,
        uploadSettle: Duration = VFSConfiguration().uploadSettle,
        uploadBurstLag: Duration = VFSConfiguration().uploadBurstLag,
        changeRoundEnded: (@Sendable () -> Void)? = nil
    ) async throws -> VFSHarness {
        let directory = directory ?? newDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try MetadataStore(file: directory.appendingPathComponent("metadata.sqlite"))
        let cache = try await BlockCache(
            directory: FilePath(directory.appendingPathComponent("blocks").path), blockSize: 1 << 20, store: store)
        var configuration = VFSConfiguration()
        configuration.remoteTimeout = remoteTimeout
        configuration.pipelineDepth = pipelineDepth
        configuration.nonMaterializingProcesses = nonMaterializing
        configuration.isReadOnly = readOnly
        configuration.cacheSize = cacheSize
        configuration.replicatesChanges = replicatesChanges
        configuration.listingAheadDepth = listingAheadDepth
        configuration.uploadSettle = uploadSettle
        configuration.uploadBurstLag = uploadBurstLag
        configuration.pollInterval = nil
        configuration.changeRoundEnded = changeRoundEnded
        let fileSystem = try await FileSystem.start(
            provider: provider, store: store, cache: cache, configuration: configuration,
            logger: Logger(label: "vfs-test"))
        return VFSHarness(fileSystem: fileSystem, directory: directory)
    }

    /// A fresh folder for a harness's store and cache, inside `folders`.
    static func newDirectory() -> URL {
        folders.appendingPathComponent("vfs-\(UUID().uuidString)")
    }

    /// One folder per test process for every harness's store and cache, removed when the process
    /// exits: each store holds a space reserve of up to 64 MiB, and runs of `swift test` outside
    /// scripts/test.sh (which removes its whole temporary root) would otherwise leave them behind.
    private static let folders: URL = {
        let folders = FileManager.default.temporaryDirectory.appendingPathComponent("fpfs-vfs-tests-\(getpid())")
        atexit { try? FileManager.default.removeItem(at: VFSHarness.folders) }
        return folders
    }()

    /// Resolves a slash-separated path from the root by lookups.
    func resolve(_ path: String) async throws -> Entry {
        var entry = try await fileSystem.lookup(parent: .root, name: [], context: context, orRoot: true)
        for component in path.split(separator: "/") {
            entry = try await fileSystem.lookup(parent: entry.inode, name: Array(component.utf8), context: context)
        }
        return entry
    }

    /// The names in a directory, through opendir/readdir/releasedir (plain or plus).
    func list(_ inode: InodeNumber, plus: Bool = false, bufferSize: Int = 4096) async throws -> [String] {
        let opened = try await fileSystem.opendir(inode: inode, flags: 0, context: context)
        defer { Task { try? await fileSystem.releasedir(inode: inode, handle: opened.handle) } }
        var names: [String] = []
        var offset: UInt64 = 0
        while true {
            var buffer = DirectoryBuffer(capacity: bufferSize, isPlus: plus)
            try await fileSystem.readdir(
                inode: inode, handle: opened.handle, offset: offset, into: &buffer, context: context)
            guard let last = buffer.items.last else { break }
            names += buffer.items.map { String(decoding: $0.name, as: UTF8.self) }
            offset = last.nextOffset
        }
        return names
    }

    /// The whole content of a file, read through open/read/release in `chunk`-byte reads.
    func readAll(_ inode: InodeNumber, chunk: Int = 128 * 1024) async throws -> [UInt8] {
        let opened = try await fileSystem.open(inode: inode, flags: O_RDONLY, context: context)
        defer { Task { try? await fileSystem.release(inode: inode, handle: opened.handle, flags: 0) } }
        var bytes: [UInt8] = []
        while true {
            let reply = try await fileSystem.read(
                inode: inode, handle: opened.handle, offset: UInt64(bytes.count), size: chunk, context: context)
            let piece = try Self.bytes(of: reply)
            if piece.isEmpty { break }
            bytes += piece
        }
        return bytes
    }

    /// Waits until `condition` holds, or records a failure after `limit`.
    static func eventually(
        _ what: String, limit: Duration = .seconds(10), _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + limit
        while try await !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("\(what) did not happen within \(limit)")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The bytes a read reply carries (reading fd-backed replies from their file).
    static func bytes(of reply: ReadReply) throws -> [UInt8] {
        switch reply {
        case .bytes(let bytes):
            return bytes
        case .fileRange(let file, let offset, let length):
            var buffer = [UInt8](repeating: 0, count: length)
            let count = buffer.withUnsafeMutableBytes {
                pread(file.fileDescriptor, $0.baseAddress, length, off_t(offset))
            }
            guard count == length else { throw Errno(rawValue: errno) }
            return buffer
        }
    }

    /// Creates `path` (its parent must exist) with `bytes`, through create/write/release.
    @discardableResult
    func writeFile(_ path: String, _ bytes: [UInt8]) async throws -> InodeNumber {
        let parts = path.split(separator: "/")
        let parent = try await resolve(parts.dropLast().joined(separator: "/"))
        let (entry, opened) = try await fileSystem.create(
            parent: parent.inode, name: Array(parts.last!.utf8), mode: 0o644, flags: O_WRONLY, context: context)
        try await write(entry.inode, opened.handle, bytes)
        return entry.inode
    }

    /// Replaces the contents of an existing file, through open(O_TRUNC)/write/release.
    func overwrite(_ inode: InodeNumber, _ bytes: [UInt8]) async throws {
        let opened = try await fileSystem.open(inode: inode, flags: O_WRONLY | O_TRUNC, context: context)
        try await write(inode, opened.handle, bytes)
    }

    private func write(_ inode: InodeNumber, _ handle: FuseKit.FileHandle, _ bytes: [UInt8]) async throws {
        let written = try await fileSystem.write(
            inode: inode, handle: handle, offset: 0, bytes: bytes, context: context)
        #expect(written == bytes.count)
        try await fileSystem.flush(inode: inode, handle: handle, context: context)
        try await fileSystem.release(inode: inode, handle: handle, flags: 0)
    }

    /// Waits until the journal is empty (the uploader has sent everything), or fails after `limit`.
    func waitForUploads(limit: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + limit
        while try await fileSystem.uploadQueue().pending > 0 {
            guard ContinuousClock.now < deadline else {
                Issue.record("the journal did not empty within \(limit)")
                return
            }
            fileSystem.retryUploadsNow()
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func xattr(_ inode: InodeNumber, _ name: String) async throws -> String {
        String(decoding: try await fileSystem.getxattr(inode: inode, name: name, context: context), as: UTF8.self)
    }
}

extension FileSystem {
    /// The root's entry (for path resolution), answered by getattr of inode 1.
    fileprivate func lookup(parent: InodeNumber, name: [UInt8], context: RequestContext, orRoot: Bool) async throws
        -> Entry
    {
        let root = try await getattr(inode: .root, context: context)
        return Entry(attributes: root.attributes, attributeTimeout: root.timeout, entryTimeout: root.timeout)
    }
}

extension InMemoryProvider {
    /// A remote with `docs/readme.txt` ("hello") and `docs/other.txt` ("other"), for the write
    /// and remote-change tests.
    static func docs() throws -> InMemoryProvider {
        let remote = InMemoryProvider()
        _ = try remote.addDirectory(path: "docs")
        _ = try remote.addFile(path: "docs/readme.txt", text: "hello\n")
        _ = try remote.addFile(path: "docs/other.txt", text: "other\n")
        return remote
    }
}

/// Text as bytes, as the filesystem's calls take names and contents.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
