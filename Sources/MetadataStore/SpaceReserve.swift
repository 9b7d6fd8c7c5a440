import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Disk space kept for the store: a file of allocated blocks beside it, given up a slice at a time
/// when a write of the store finds the disk full, and taken again once there is room.
///
/// The daemon's own writes to the cache disk stop while some of it is free, but the kernel writes
/// passthrough files by itself and can fill the disk to the last block. The journal must still
/// take the `rm` that frees it; this file's blocks are what it then writes into. A slice, not the
/// whole: a file the kernel is still writing takes whatever is freed, and a store write that
/// found the disk full while it ran (an upload's end, say) would otherwise have handed it all
/// the reserve, leaving none for the `rm` after it.
public final class SpaceReserve: Sendable {
    private let path: String
    private let size: Int64
    private struct State {
        /// How many bytes of the file are allocated (its length: slices are cut from its end).
        var heldBytes: Int64 = 0
        var lastAttempt = ContinuousClock.now - .seconds(3600)
        /// How many slices have been given up: a refill that ran meanwhile does not count.
        var releases = 0
        let size: Int64

        var isDue: Bool { heldBytes < size && ContinuousClock.now - lastAttempt >= SpaceReserve.retryInterval }
    }
    private let state: Mutex<State>

    /// How long after a failed attempt the next one waits: a full disk stays full for a while.
    private static let retryInterval = Duration.seconds(5)
    /// What one release gives up: far more than a transaction of the journal writes.
    static let slice: Int64 = 1 << 20

    /// A reserve of `size` bytes in the file at `path`, taken at once if there is room.
    init(path: String, size: Int64) {
        self.path = path
        self.size = size
        // A reserve left by the last mount keeps what it has (slices are cut from its end).
        var existing = stat()
        let allocated = stat(path, &existing) == 0 ? min(Int64(existing.st_blocks) * 512, size) : 0
        self.state = Mutex(State(heldBytes: allocated, size: size))
        takeIfRoom()
    }

    /// Whether `takeIfRoom` would try now: not all held, and the last attempt a while ago. Cheap,
    /// so that a store write on a disk without room for the reserve does not leave its thread for
    /// it.
    var isDue: Bool { state.withLock { $0.isDue } }

    /// Frees the reserve's last slice of blocks; true when it held some. Under the lock, so that a
    /// refill ending meanwhile (`takeIfRoom`) leaves the file as this says.
    func release() -> Bool {
        state.withLock { state in
            guard state.heldBytes > 0 else { return false }
            state.heldBytes = max(state.heldBytes - Self.slice, 0)
            state.releases += 1
            cut(to: state.heldBytes)
            return true
        }
    }

    /// Takes the whole reserve again when it is not all held, there is room for what it lacks
    /// beyond the reserve's half, and the last attempt is a while ago. Blocks briefly (statvfs,
    /// fallocate), outside the lock: `release` runs on the store's writing task and must not
    /// wait for an allocation.
    func takeIfRoom() {
        let start = state.withLock { state -> (held: Int64, releases: Int)? in
            guard state.isDue else { return nil }
            state.lastAttempt = .now
            return (state.heldBytes, state.releases)
        }
        guard let start else { return }
        // What is missing needs room beyond itself, half the reserve again, so as not to take the
        // last of a disk being written.
        var disk = statvfs()
        let directory = (path as NSString).deletingLastPathComponent
        guard statvfs(directory, &disk) == 0,
            Int64(disk.f_bavail) * Int64(disk.f_frsize) >= size - start.held + size / 2
        else { return }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        let allocated = posix_fallocate(descriptor, 0, off_t(size)) == 0
        close(descriptor)
        state.withLock { state in
            if allocated, state.releases == start.releases {
                state.heldBytes = size
            } else {
                // A failure may have allocated part of the range, a release meanwhile cut a slice
                // the allocation put back: the file goes back to what is held.
                cut(to: state.heldBytes)
            }
        }
    }

    /// Leaves the reserve's file `bytes` long, or none.
    private func cut(to bytes: Int64) {
        if bytes == 0 { unlink(path) } else { truncate(path, off_t(bytes)) }
    }

    /// The reserve for a store on a disk of `capacity` bytes: 2% of it, from 8 MiB (what SQLite's
    /// write-ahead log may grow to between checkpoints) to 64 MiB.
    public static func size(forDiskOf capacity: Int64) -> Int64 {
        min(max(capacity / 50, 8 << 20), 64 << 20)
    }
}
