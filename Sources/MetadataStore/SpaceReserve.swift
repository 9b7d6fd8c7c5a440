import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Disk space kept for the store: a file of allocated blocks beside it, given up when a write of
/// the store finds the disk full, and taken again once there is room.
///
/// The daemon's own writes to the cache disk stop while some of it is free, but the kernel writes
/// passthrough files by itself and can fill the disk to the last block. The journal must still
/// take the `rm` that frees it; this file's blocks are what it then writes into.
public final class SpaceReserve: Sendable {
    private let path: String
    private let size: Int64
    private struct State {
        var held = false
        var lastAttempt = ContinuousClock.now - .seconds(3600)

        var isDue: Bool { !held && ContinuousClock.now - lastAttempt >= SpaceReserve.retryInterval }
    }
    private let state = Mutex(State())

    /// How long after a failed attempt the next one waits: a full disk stays full for a while.
    private static let retryInterval = Duration.seconds(5)

    /// A reserve of `size` bytes in the file at `path`, taken at once if there is room.
    init(path: String, size: Int64) {
        self.path = path
        self.size = size
        takeIfRoom()
    }

    /// Whether `takeIfRoom` would try now: not held, and the last attempt a while ago. Cheap, so
    /// that a store write on a disk without room for the reserve does not leave its thread for it.
    var isDue: Bool { state.withLock { $0.isDue } }

    /// Frees the reserve's blocks; true when it held some.
    func release() -> Bool {
        let held = state.withLock { state in
            defer { state.held = false }
            return state.held
        }
        if held { unlink(path) }
        return held
    }

    /// Takes the reserve again when it is not held, there is room for it beyond itself, and the
    /// last attempt is a while ago. Blocks briefly (statvfs, fallocate).
    func takeIfRoom() {
        let due = state.withLock { state -> Bool in
            guard state.isDue else { return false }
            state.lastAttempt = .now
            return true
        }
        guard due else { return }
        // A reserve left by the last mount has its blocks already; a new one needs room beyond
        // itself, half as much again, so as not to take the last of a disk being written.
        var existing = stat()
        if stat(path, &existing) != 0 || Int64(existing.st_blocks) * 512 < size {
            var disk = statvfs()
            let directory = (path as NSString).deletingLastPathComponent
            guard statvfs(directory, &disk) == 0, Int64(disk.f_bavail) * Int64(disk.f_frsize) >= size + size / 2 else {
                return
            }
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        guard posix_fallocate(descriptor, 0, off_t(size)) == 0 else {
            unlink(path)
            return
        }
        state.withLock { $0.held = true }
    }

    /// The reserve for a store on a disk of `capacity` bytes: 2% of it, from 8 MiB (what SQLite's
    /// write-ahead log may grow to between checkpoints) to 64 MiB.
    public static func size(forDiskOf capacity: Int64) -> Int64 {
        min(max(capacity / 50, 8 << 20), 64 << 20)
    }
}
