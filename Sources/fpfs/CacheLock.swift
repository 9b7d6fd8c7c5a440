import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's exclusive hold on its cache folder: an flock on `CACHE/lock`, held for the
/// daemon's whole life and let go by the kernel when it exits, however it exits.
///
/// Two daemons on one cache folder would both send its journal and share its control socket; so
/// a second mount is refused, naming the mount that holds the folder, which the lock file says
/// ("PID MOUNTPOINT"). Holding the lock also makes the control socket and the pid file this
/// daemon's own: no other daemon can have made them since, so removing them at exit is safe.
final class CacheLock: Sendable {
    private let fd: Int32

    /// How long a mount waits for a daemon whose mount is gone (an unmount it is finishing) to
    /// let go of the folder.
    static let exitingHolderWait: Duration = .seconds(30)

    /// Takes the lock on `directory` for the mount on `mountpoint`; waits for a holder that is
    /// finishing an unmount, and fails at once while the holder's mount is still there.
    init(directory: URL, mountpoint: String) async throws {
        let path = directory.appendingPathComponent("lock").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CommandFailure("cannot open the cache folder's lock '\(path)': \(String(cString: strerror(errno)))")
        }
        let deadline = ContinuousClock.now + Self.exitingHolderWait
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let failure = errno
            guard failure == EWOULDBLOCK || failure == EINTR else {
                close(fd)
                throw CommandFailure(
                    "cannot lock the cache folder '\(directory.path)': \(String(cString: strerror(failure)))")
            }
            let holder = Self.holder(in: fd)
            let exiting = holder.map { !Self.isMounted($0.mountpoint) } ?? false
            if !exiting || ContinuousClock.now >= deadline {
                close(fd)
                throw CommandFailure(Self.refusal(directory: directory, holder: holder, exiting: exiting))
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        let line = Array("\(getpid()) \(mountpoint)\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, line, line.count, 0)
        self.fd = fd
    }

    /// Lets go of the folder: called last, after the daemon removed its socket and pid file.
    func release() {
        close(fd)
    }

    private struct Holder {
        let pid: String
        let mountpoint: String
    }

    /// What the holder wrote: its pid and mountpoint.
    private static func holder(in fd: Int32) -> Holder? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        let line = String(decoding: buffer.prefix(count), as: UTF8.self).trimmingCharacters(in: .newlines)
        guard let space = line.firstIndex(of: " ") else { return nil }
        return Holder(pid: String(line[..<space]), mountpoint: String(line[line.index(after: space)...]))
    }

    private static func isMounted(_ mountpoint: String) -> Bool {
        MountTable.mount(at: mountpoint)?.type == "fuse.fpfs"
    }

    private static func refusal(directory: URL, holder: Holder?, exiting: Bool) -> String {
        let folder = "the cache folder '\(directory.path)'"
        guard let holder else { return "\(folder) is in use by another fpfs daemon" }
        if exiting {
            return
                "\(folder) is still held by the daemon (pid \(holder.pid)) of the unmounted '\(holder.mountpoint)', which has not exited after \(exitingHolderWait)"
        }
        return
            "\(folder) is in use by the mount on '\(holder.mountpoint)' (pid \(holder.pid)); unmount it first, or give this mount its own --cache-dir"
    }
}
