import FileProviderKit
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// The folder of whole local contents (DESIGN §4): a file written here keeps all its bytes in
/// `local/INODE` — named by inode, which never changes, so a new item's file stays put when the
/// remote gives it an identifier. The uploader sends snapshots of these files (`uploads/`), so
/// that writes during an upload do not change what is being sent.
///
/// It also counts the handles open for writing, so that the uploader waits for the last close, and
/// every open descriptor of a content, so that eviction deletes only copies no one uses.
final class LocalFileFolder: Sendable {
    let directory: FilePath
    let uploads: FilePath

    /// Guards the inodes with local content, which of them are conflict copies, the count of
    /// writers of each, and the count of open descriptors (`LocalFile`s) of each.
    private struct State {
        var items: Set<UInt64>
        var conflictCopies: Set<UInt64>
        var writers: [UInt64: Int] = [:]
        var users: [UInt64: Int] = [:]
    }
    private let state: Mutex<State>

    /// Opens the folder under `root` for the items the store says have local content, removing
    /// files the store does not know and snapshots left by an interrupted upload.
    init(root: FilePath, items: [UInt64: Bool]) throws {
        self.directory = root.appending("local")
        self.uploads = root.appending("uploads")
        self.state = Mutex(State(items: Set(items.keys), conflictCopies: Set(items.filter(\.value).keys)))
        for folder in [directory, uploads] {
            try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.string)) ?? []
        where UInt64(name).map({ items[$0] == nil }) ?? true {
            try? FileManager.default.removeItem(atPath: directory.appending(name).string)
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: uploads.string)) ?? [] {
            try? FileManager.default.removeItem(atPath: uploads.appending(name).string)
        }
    }

    func path(of inode: UInt64) -> FilePath { directory.appending(String(inode)) }

    func hasContent(_ inode: UInt64) -> Bool { state.withLock { $0.items.contains(inode) } }

    func isConflictCopy(_ inode: UInt64) -> Bool { state.withLock { $0.conflictCopies.contains(inode) } }

    /// Opens the local content of `inode` for reading and writing; a missing file (an item
    /// created just before a crash) is created empty.
    func open(_ inode: UInt64) async throws -> LocalFile {
        state.withLock { state in
            state.items.insert(inode)
            state.users[inode, default: 0] += 1
        }
        return try await openCounted(inode)
    }

    /// Opens the local content of `inode` if it has one (it may have been evicted an instant ago);
    /// nil otherwise. Counted as a user from the check on, so eviction cannot slip in between.
    func openExisting(_ inode: UInt64) async throws -> LocalFile? {
        let exists = state.withLock { state -> Bool in
            guard state.items.contains(inode) else { return false }
            state.users[inode, default: 0] += 1
            return true
        }
        return exists ? try await openCounted(inode) : nil
    }

    /// Opens the content of `inode`, already counted as a user; the count drops when the
    /// `LocalFile` goes (or the open fails).
    private func openCounted(_ inode: UInt64) async throws -> LocalFile {
        let path = path(of: inode)
        let release: @Sendable () -> Void = { [self] in
            state.withLock { state in
                let left = (state.users[inode] ?? 1) - 1
                state.users[inode] = left > 0 ? left : nil
            }
        }
        do {
            let descriptor = try await BlockingIO.run {
                try FileDescriptor.open(
                    path, .readWrite, options: [.create, .closeOnExec], permissions: [.ownerReadWrite])
            }
            return LocalFile(descriptor: descriptor, onClose: release)
        } catch {
            release()
            throw error
        }
    }

    /// Forgets the local copy of `inode` and deletes it, unless it is open, written or a writer
    /// waits: eviction of a copy whose changes are all on the remote. True when it went.
    func evictIfUnused(_ inode: UInt64) async -> Bool {
        let unused = state.withLock { state -> Bool in
            guard state.users[inode] == nil, state.writers[inode] == nil, state.items.contains(inode) else {
                return false
            }
            state.items.remove(inode)
            state.conflictCopies.remove(inode)
            return true
        }
        guard unused else { return false }
        let path = path(of: inode)
        _ = try? await BlockingIO.run { unlink(path.string) }
        return true
    }

    /// Bytes of the local copy of `inode` on disk, and when it was last changed.
    func usage(of inode: UInt64) async -> (bytes: UInt64, modified: Date)? {
        guard let status = try? await status(of: inode) else { return nil }
        return (UInt64(status.st_blocks) * 512, Date(timeIntervalSince1970: TimeInterval(status.st_mtim.tv_sec)))
    }

    /// The length of the local content of `inode`; a missing file (an item made an instant ago)
    /// is empty.
    func length(of inode: UInt64) async throws -> UInt64 {
        try await status(of: inode).map { UInt64($0.st_size) } ?? 0
    }

    /// `stat` of the local content of `inode`; nil when it has no file.
    private func status(of inode: UInt64) async throws -> stat? {
        let path = path(of: inode)
        return try await BlockingIO.run {
            var status = stat()
            guard stat(path.string, &status) == 0 else {
                if errno == ENOENT { return nil }
                throw Errno(rawValue: errno)
            }
            return status
        }
    }

    /// Makes `source` (the complete cached content) the local content of `inode`. The copy is
    /// written beside and renamed into place, so a crash leaves the old state or the new.
    func adopt(_ inode: UInt64, copying source: FileDescriptor, size: UInt64) async throws {
        let path = path(of: inode)
        let partial = directory.appending("\(inode).partial")
        try await BlockingIO.run {
            try self.checkRoom(for: size)
            let target = try FileDescriptor.open(
                partial, .writeOnly, options: [.create, .truncate, .closeOnExec], permissions: [.ownerReadWrite])
            defer { try? target.close() }
            try Self.copy(from: source, to: target, size: size)
            // The copy replaces nothing a crash could lose, but it is the item's content from now
            // on: on disk before it is named.
            guard fsync(target.rawValue) == 0 else { throw Errno(rawValue: errno) }
            guard rename(partial.string, path.string) == 0 else { throw Errno(rawValue: errno) }
        }
        state.withLock { _ = $0.items.insert(inode) }
    }

    /// Makes the file open as `source` (a complete cache file, on the same filesystem) the local
    /// content of `inode` itself, by a second name instead of a copy: whatever the kernel reads
    /// of that file for a passthrough handle then sees this content's writes. Needs a file that
    /// still has a name; throws otherwise.
    func adopt(_ inode: UInt64, linking source: FileDescriptor) async throws {
        let path = path(of: inode)
        let partial = directory.appending("\(inode).partial")
        try await BlockingIO.run {
            unlink(partial.string)
            // The descriptor's link in /proc names the file itself, whatever its path.
            guard linkat(AT_FDCWD, "/proc/self/fd/\(source.rawValue)", AT_FDCWD, partial.string, AT_SYMLINK_FOLLOW) == 0
            else { throw Errno(rawValue: errno) }
            guard rename(partial.string, path.string) == 0 else {
                let error = Errno(rawValue: errno)
                unlink(partial.string)
                throw error
            }
        }
        state.withLock { _ = $0.items.insert(inode) }
    }

    /// Takes a conflict copy's snapshot, already uploaded, as the content of its new item `inode`.
    func adoptConflictCopy(_ inode: UInt64, moving file: FilePath) async throws {
        let path = path(of: inode)
        try await BlockingIO.run {
            guard rename(file.string, path.string) == 0 else { throw Errno(rawValue: errno) }
        }
        state.withLock { state in
            state.items.insert(inode)
            state.conflictCopies.insert(inode)
        }
    }

    /// Deletes the local content of `inode` (the item is gone, or the remote's version replaced it).
    /// Open handles keep their descriptors.
    func remove(_ inode: UInt64) async {
        state.withLock { state in
            state.items.remove(inode)
            state.conflictCopies.remove(inode)
        }
        let path = path(of: inode)
        _ = try? await BlockingIO.run { unlink(path.string) }
    }

    /// Gives up the local content of `inode` for the remote's newer version, unless a writer has
    /// it open: then it stays, and false says so. The file itself is deleted by `remove`.
    func release(_ inode: UInt64) -> Bool {
        state.withLock { state in
            guard state.writers[inode] == nil else { return false }
            state.items.remove(inode)
            state.conflictCopies.remove(inode)
            return true
        }
    }

    /// Takes back contents given up by `release` whose replacement failed.
    func restore(_ inodes: some Sequence<UInt64>) {
        state.withLock { $0.items.formUnion(inodes) }
    }

    /// Copies the local content of `inode` as it is now into a snapshot for an upload, and returns
    /// its path and size; the caller deletes it when the upload ends. Only for items the store
    /// still holds: a missing content file is taken as empty.
    func snapshot(_ inode: UInt64, tag: Int64) async throws -> (path: FilePath, size: UInt64) {
        let source = path(of: inode)
        let snapshot = uploads.appending("\(inode)-\(tag)")
        let size = try await BlockingIO.run {
            // A file made an instant ago may not have its content file yet: it is empty.
            let input = try FileDescriptor.open(
                source, .readOnly, options: [.create, .closeOnExec], permissions: [.ownerReadWrite])
            defer { try? input.close() }
            let output = try FileDescriptor.open(
                snapshot, .writeOnly, options: [.create, .truncate, .closeOnExec], permissions: [.ownerReadWrite])
            defer { try? output.close() }
            let size = UInt64(try input.seek(offset: 0, from: .end))
            try self.checkRoom(for: size)
            try Self.copy(from: input, to: output, size: size)
            return size
        }
        return (snapshot, size)
    }

    // MARK: Room

    /// Fails with ENOSPC when writing `bytes` more would eat into the reserve the store and the
    /// journal need: so that on a full disk a write is refused cleanly, while deleting files
    /// (which needs a journal entry) still works. The reserve is 2% of the disk, from 8 MiB (what
    /// SQLite's write-ahead log may grow to between checkpoints) to 64 MiB.
    func ensureRoom(for bytes: UInt64) async throws {
        try await BlockingIO.run { try self.checkRoom(for: bytes) }
    }

    /// `ensureRoom`, for code already off the cooperative threads (statvfs may block).
    private func checkRoom(for bytes: UInt64) throws {
        var disk = statvfs()
        guard statvfs(directory.string, &disk) == 0 else { return }
        let unit = UInt64(disk.f_frsize)
        let reserve = min(max(UInt64(disk.f_blocks) * unit / 50, 8 << 20), 64 << 20)
        guard UInt64(disk.f_bavail) * unit >= bytes + reserve else { throw Errno.noSpace }
    }

    // MARK: Writers

    func beginWriting(_ inode: UInt64) { state.withLock { $0.writers[inode, default: 0] += 1 } }

    func endWriting(_ inode: UInt64) {
        state.withLock { state in
            let left = (state.writers[inode] ?? 1) - 1
            state.writers[inode] = left > 0 ? left : nil
        }
    }

    func isOpenForWriting(_ inode: UInt64) -> Bool { state.withLock { $0.writers[inode] != nil } }

    /// Copies `size` bytes from the start of `source` to the start of `target`. The buffer is no
    /// larger than the content: a small file's upload need not clear a megabyte.
    private static func copy(from source: FileDescriptor, to target: FileDescriptor, size: UInt64) throws {
        var buffer = [UInt8](repeating: 0, count: Int(min(size, 1 << 20)))
        var offset: UInt64 = 0
        while offset < size {
            let wanted = Int(min(size - offset, UInt64(buffer.count)))
            let count = try buffer.withUnsafeMutableBytes {
                try source.read(
                    fromAbsoluteOffset: Int64(offset), into: UnsafeMutableRawBufferPointer(rebasing: $0[..<wanted]))
            }
            guard count > 0 else { throw Errno(rawValue: EIO) }
            _ = try buffer.withUnsafeBytes {
                try target.writeAll(toAbsoluteOffset: Int64(offset), UnsafeRawBufferPointer(rebasing: $0[..<count]))
            }
            offset += UInt64(count)
        }
    }
}
