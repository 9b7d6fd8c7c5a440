import FileProviderKit
import Foundation
import MetadataStore
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// The folder of whole local contents (ARCHITECTURE §4): a file written here keeps all its bytes in
/// `local/INODE` — named by inode, which never changes, so a new item's file stays put when the
/// remote gives it an identifier. The uploader sends snapshots of these files (`uploads/`), so
/// that writes during an upload do not change what is being sent. A snapshot of a content no one
/// has open is a second name of the same file rather than a copy; the next open then gives the
/// content a file of its own first (DECISIONS 96).
///
/// It also counts the handles open for writing, so that the uploader waits for the last close, and
/// every open descriptor of a content, so that eviction deletes only copies no one uses.
final class LocalFileFolder: Sendable {
    let directory: FilePath
    let uploads: FilePath
    /// The last bytes of items deleted here whose creation was sent and never confirmed, by local
    /// identifier: their deletion compares them with what the remote holds at the item's place
    /// before it deletes that (DECISIONS 284).
    let unconfirmed: FilePath
    private let nameless: NamelessFiles

    /// Guards the inodes with local content, which of them are conflict copies, the count of
    /// writers of each, the count of open descriptors (`LocalFile`s) of each, the count of upload
    /// snapshots of each, the contents an upload snapshot names too, and the copies under way that
    /// end such sharing.
    private struct State {
        var items: Set<UInt64>
        var conflictCopies: Set<UInt64>
        var writers: [UInt64: Int] = [:]
        var users: [UInt64: Int] = [:]
        var snapshots: [UInt64: Int] = [:]
        /// Contents whose file is also an upload's snapshot, by the snapshot's path.
        var shared: [UInt64: FilePath] = [:]
        var unsharing: [UInt64: Task<Void, any Error>] = [:]

        /// Forgets that the content of `inode` is shared: its name now means another file, or none.
        mutating func replaced(_ inode: UInt64) { shared[inode] = nil }
    }
    private let state: Mutex<State>

    /// Opens the folder under `root` for the items the store says have local content, removing
    /// files the store does not know, snapshots left by an interrupted upload, and the bytes of
    /// deleted items no pending deletion needs (`unconfirmedDeletions`).
    init(root: FilePath, items: [UInt64: Bool], unconfirmedDeletions: Set<ItemIdentifier>) throws {
        self.directory = root.appending("local")
        self.uploads = root.appending("uploads")
        self.unconfirmed = root.appending("unconfirmed")
        self.nameless = NamelessFiles(in: directory)
        self.state = Mutex(State(items: Set(items.keys), conflictCopies: Set(items.filter(\.value).keys)))
        for name in (try? FileManager.default.contentsOfDirectory(atPath: unconfirmed.string)) ?? []
        where !unconfirmedDeletions.contains(ItemIdentifier(name)) {
            try? FileManager.default.removeItem(atPath: unconfirmed.appending(name).string)
        }
        for folder in [directory, uploads, unconfirmed] {
            try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.string)) ?? []
        where UInt64(name).map({ items[$0] == nil }) ?? true {
            try? FileManager.default.removeItem(atPath: directory.appending(name).string)
        }
        for leftover in Self.leftoverSnapshots(under: root) {
            try? FileManager.default.removeItem(atPath: leftover.path.string)
        }
    }

    /// The snapshots an upload under `root` left when the daemon ended during its send, by
    /// inode: what the remote may hold of the file. The folder's `init` removes them.
    static func leftoverSnapshots(under root: FilePath) -> [(inode: UInt64, path: FilePath)] {
        let uploads = root.appending("uploads")
        return ((try? FileManager.default.contentsOfDirectory(atPath: uploads.string)) ?? []).compactMap { name in
            name.split(separator: "-").first.flatMap { UInt64($0) }.map { ($0, uploads.appending(name)) }
        }
    }

    func path(of inode: UInt64) -> FilePath { directory.appending(String(inode)) }

    func hasContent(_ inode: UInt64) -> Bool { state.withLock { $0.items.contains(inode) } }

    func isConflictCopy(_ inode: UInt64) -> Bool { state.withLock { $0.conflictCopies.contains(inode) } }

    /// Opens the local content of `inode` for reading and writing; a missing file (an item
    /// created just before a crash) is created empty.
    func open(_ inode: UInt64) async throws -> LocalFile {
        let unsharing = state.withLock { state in
            state.items.insert(inode)
            state.users[inode, default: 0] += 1
            return unsharingTask(inode, in: &state)
        }
        return try await openCounted(inode, after: unsharing)
    }

    /// A new file in the folder without a name yet, for an item being created: making a file
    /// allocates an inode on the disk, which can take as long as storing the item, so creations
    /// take files made ahead (`NamelessFiles`, DECISIONS 156) and name them once the item has its
    /// inode (`open(_:naming:)`). Nil where the disk cannot make nameless files (O_TMPFILE).
    func makeNameless() async -> FileDescriptor? { await nameless.take() }

    /// Makes no more nameless files and closes those made ahead: at unmount.
    func close() { nameless.close() }

    /// Opens the local content of the new item `inode` as `open` does, giving it `nameless`
    /// (`makeNameless`) as its file. Should the name be taken (a file left by a crash), or the
    /// link fail, the nameless file goes and the named one opens.
    func open(_ inode: UInt64, naming nameless: FileDescriptor?) async throws -> LocalFile {
        guard let nameless else { return try await open(inode) }
        let path = path(of: inode)
        let linked =
            (try? await BlockingIO.run {
                // Linking by the descriptor's /proc name needs no privilege (AT_EMPTY_PATH would).
                linkat(AT_FDCWD, "/proc/self/fd/\(nameless.rawValue)", AT_FDCWD, path.string, AT_SYMLINK_FOLLOW) == 0
            }) ?? false
        guard linked else {
            try? nameless.close()
            return try await open(inode)
        }
        state.withLock { state in
            state.items.insert(inode)
            state.users[inode, default: 0] += 1
        }
        return LocalFile(descriptor: nameless, onClose: releaser(of: inode))
    }

    /// Opens the local content of `inode` if it has one (it may have been evicted an instant ago);
    /// nil otherwise. Counted as a user from the check on, so eviction cannot slip in between.
    func openExisting(_ inode: UInt64) async throws -> LocalFile? {
        let opening = state.withLock { state -> (Task<Void, any Error>?)? in
            guard state.items.contains(inode) else { return nil }
            state.users[inode, default: 0] += 1
            return .some(unsharingTask(inode, in: &state))
        }
        guard let unsharing = opening else { return nil }
        return try await openCounted(inode, after: unsharing)
    }

    /// Opens the content of `inode`, already counted as a user, once `unsharing` (if any) gave it
    /// a file of its own; the count drops when the `LocalFile` goes (or the open fails).
    private func openCounted(_ inode: UInt64, after unsharing: Task<Void, any Error>?) async throws -> LocalFile {
        let path = path(of: inode)
        let release = releaser(of: inode)
        do {
            try await unsharing?.value
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

    /// What a `LocalFile` of `inode` calls when it closes: one user fewer.
    private func releaser(of inode: UInt64) -> @Sendable () -> Void {
        { [self] in
            state.withLock { state in
                let left = (state.users[inode] ?? 1) - 1
                state.users[inode] = left > 0 ? left : nil
            }
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
            state.replaced(inode)
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

    /// The length and modification time of the local content of `inode`; nil when it has no file.
    func sizeAndModification(of inode: UInt64) async throws -> (size: UInt64, modification: Timestamp)? {
        try await status(of: inode).map { (UInt64($0.st_size), Timestamp($0.st_mtim)) }
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
            // The copy replaces nothing a crash could lose, but it is the item's content from now
            // on: on disk before it is named.
            try self.copy(source, size: size, to: partial, durably: true)
            guard rename(partial.string, path.string) == 0 else { throw Errno(rawValue: errno) }
        }
        state.withLock { state in
            state.items.insert(inode)
            state.replaced(inode)
        }
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
        state.withLock { state in
            state.items.insert(inode)
            state.replaced(inode)
        }
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
            // A snapshot that was a second name of the original's content still is one until the
            // original goes: an opener of either copies first.
            if state.shared.values.contains(file) { state.shared[inode] = file }
        }
    }

    /// Deletes the local content of `inode` (the item is gone, or the remote's version replaced it).
    /// Open handles keep their descriptors.
    func remove(_ inode: UInt64) async {
        state.withLock { state in
            state.items.remove(inode)
            state.conflictCopies.remove(inode)
            state.replaced(inode)
        }
        let path = path(of: inode)
        _ = try? await BlockingIO.run { unlink(path.string) }
    }

    /// Like `remove`, but the content is kept as the last bytes of the deleted item `identifier`,
    /// whose creation may have reached the remote (an empty file when it had none).
    func keepDeleted(_ inode: UInt64, as identifier: ItemIdentifier) async {
        state.withLock { state in
            state.items.remove(inode)
            state.conflictCopies.remove(inode)
            state.replaced(inode)
        }
        let (path, kept) = (path(of: inode), deletedBytes(of: identifier))
        _ = try? await BlockingIO.run {
            guard rename(path.string, kept.string) != 0 else { return }
            let made = Glibc.open(kept.string, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            if made >= 0 { Glibc.close(made) }
        }
    }

    /// Where `keepDeleted` keeps the bytes of the deleted item `identifier`; `discardDeleted`
    /// removes them.
    func deletedBytes(of identifier: ItemIdentifier) -> FilePath { unconfirmed.appending(identifier.rawValue) }

    func discardDeleted(_ identifier: ItemIdentifier) { unlink(deletedBytes(of: identifier).string) }

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

    /// Makes a snapshot of the local content of `inode` as it is now for an upload, and returns
    /// its path and size; the caller gives it back with `discardSnapshot` when the upload ends.
    /// Only for items the store still holds: a missing content file is taken as empty.
    ///
    /// When no one has the content open, the snapshot is a second name of its file (no bytes
    /// copied), and the next open copies the content first (`unsharingTask`). Otherwise it is a
    /// copy, as writes may come through the open descriptors at any time.
    func snapshot(_ inode: UInt64, tag: Int64) async throws -> (path: FilePath, size: UInt64) {
        let source = path(of: inode)
        let snapshot = uploads.appending("\(inode)-\(tag)")
        state.withLock { $0.snapshots[inode, default: 0] += 1 }
        do {
            return try await take(snapshot, of: source, inode: inode)
        } catch {
            endSnapshot(of: inode)
            throw error
        }
    }

    private func take(_ snapshot: FilePath, of source: FilePath, inode: UInt64) async throws
        -> (path: FilePath, size: UInt64)
    {
        // Linked first and published after: an open counted before the publication makes it a
        // copy below, and one counted after it finds the content shared.
        let linked = try await BlockingIO.run { () -> UInt64? in
            unlink(snapshot.string)
            guard link(source.string, snapshot.string) == 0 else { return nil }
            var status = stat()
            guard stat(snapshot.string, &status) == 0 else { throw Errno(rawValue: errno) }
            return UInt64(status.st_size)
        }
        if let size = linked {
            let published = state.withLock { state in
                guard state.users[inode] == nil, state.writers[inode] == nil, state.items.contains(inode) else {
                    return false
                }
                state.shared[inode] = snapshot
                return true
            }
            if published { return (snapshot, size) }
            unlink(snapshot.string)
        }
        let size = try await BlockingIO.run {
            // A file made an instant ago may not have its content file yet: it is empty.
            let input = try FileDescriptor.open(
                source, .readOnly, options: [.create, .closeOnExec], permissions: [.ownerReadWrite])
            defer { try? input.close() }
            let size = UInt64(try input.seek(offset: 0, from: .end))
            try self.copy(input, size: size, to: snapshot)
            return size
        }
        return (snapshot, size)
    }

    /// Deletes an upload's snapshot made by `snapshot`; its content is no longer shared.
    func discardSnapshot(_ snapshot: FilePath, of inode: UInt64) {
        state.withLock { state in
            if state.shared[inode] == snapshot { state.shared[inode] = nil }
        }
        unlink(snapshot.string)
        endSnapshot(of: inode)
    }

    private func endSnapshot(of inode: UInt64) {
        state.withLock { state in
            let left = (state.snapshots[inode] ?? 1) - 1
            state.snapshots[inode] = left > 0 ? left : nil
        }
    }

    /// Whether an upload's snapshot holds the bytes of a content deleted here: its disk space
    /// comes back when that upload's attempt ends.
    private var snapshotsHoldDeletedBytes: Bool {
        state.withLock { state in state.snapshots.keys.contains { !state.items.contains($0) } }
    }

    /// The copy that gives the content of `inode` a file of its own again while an upload's
    /// snapshot names its file, so that an opener's writes cannot reach what is being sent; nil
    /// when it is not shared. Openers that come meanwhile wait for the same copy. Called with the
    /// state locked, in the section that counts the opener.
    private func unsharingTask(_ inode: UInt64, in state: inout State) -> Task<Void, any Error>? {
        if let running = state.unsharing[inode] { return running }
        guard let snapshot = state.shared[inode] else { return nil }
        let path = path(of: inode)
        let partial = directory.appending("\(inode).partial")
        let task = Task { [self] in
            do {
                try await BlockingIO.run {
                    let input = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec])
                    defer { try? input.close() }
                    try self.copy(
                        input, size: UInt64(try input.seek(offset: 0, from: .end)), to: partial, durably: true)
                    guard rename(partial.string, path.string) == 0 else { throw Errno(rawValue: errno) }
                }
            } catch {
                unlink(partial.string)
                self.state.withLock { $0.unsharing[inode] = nil }
                throw error
            }
            self.state.withLock { state in
                state.unsharing[inode] = nil
                if state.shared[inode] == snapshot { state.shared[inode] = nil }
            }
        }
        state.unsharing[inode] = task
        return task
    }

    // MARK: Room

    /// Fails with ENOSPC when writing `bytes` more would eat into the reserve the store and the
    /// journal need: so that on a full disk a write is refused cleanly, while deleting files
    /// (which needs a journal entry) still works. The reserve is the size of the store's own
    /// (`SpaceReserve.size`), kept free besides it.
    ///
    /// A deleted file an upload is sending frees its space only when that attempt ends (the
    /// snapshot is a name of its bytes, open in the provider): `rm big; echo > new` on a full disk
    /// failed while the first attempt was under way. So a call that finds no room while such
    /// space is held waits for it, up to `roomWait` (DECISIONS 312).
    func ensureRoom(for bytes: UInt64) async throws {
        let deadline = ContinuousClock.now + Self.roomWait
        while true {
            // Asked before the check, so that space freed between the two is checked once more.
            let held = snapshotsHoldDeletedBytes
            do {
                return try await BlockingIO.run { try self.checkRoom(for: bytes) }
            } catch let error as Errno where error == .noSpace && held && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// How long a write on a full disk waits for the space of deleted files being uploaded: the
    /// end of an attempt against an unreachable or hung remote, not of a long upload.
    static let roomWait: Duration = .seconds(5)

    /// `ensureRoom`, for code already off the cooperative threads (statvfs may block).
    private func checkRoom(for bytes: UInt64) throws {
        guard !hasRoom(for: bytes) else { return }
        // The bytes kept of deleted items give way to new ones (deleting a file must free the
        // disk): without them, a deletion leaves what the remote may hold at the item's place,
        // garbage rather than a loss (DECISIONS 284).
        let kept = (try? FileManager.default.contentsOfDirectory(atPath: unconfirmed.string)) ?? []
        for name in kept { unlink(unconfirmed.appending(name).string) }
        guard !kept.isEmpty, hasRoom(for: bytes) else { throw Errno.noSpace }
    }

    private func hasRoom(for bytes: UInt64) -> Bool {
        var disk = statvfs()
        guard statvfs(directory.string, &disk) == 0 else { return true }
        let unit = UInt64(disk.f_frsize)
        let reserve = UInt64(SpaceReserve.size(forDiskOf: Int64(UInt64(disk.f_blocks) * unit)))
        return UInt64(disk.f_bavail) * unit >= bytes + reserve
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

    /// Copies the first `size` bytes of `source` into a new file at `target` (replacing what is
    /// there), after checking the room for them; with `durably`, the copy is on disk before this
    /// returns. The buffer is no larger than the content: a small file's upload need not clear a
    /// megabyte.
    private func copy(_ source: FileDescriptor, size: UInt64, to target: FilePath, durably: Bool = false) throws {
        try checkRoom(for: size)
        let output = try FileDescriptor.open(
            target, .writeOnly, options: [.create, .truncate, .closeOnExec], permissions: [.ownerReadWrite])
        defer { try? output.close() }
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
                try output.writeAll(toAbsoluteOffset: Int64(offset), UnsafeRawBufferPointer(rebasing: $0[..<count]))
            }
            offset += UInt64(count)
        }
        if durably, fsync(output.rawValue) != 0 { throw Errno(rawValue: errno) }
    }
}
