import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The fpfs daemon of a mount, known by the pid it wrote to `CACHE_DIR/daemon.pid`.
///
/// The daemon is not the test's child (`fpfs mount` started it and exited), so the test cannot
/// wait for it; it watches /proc instead, and counts a zombie as exited, because in a container
/// nobody may reap it.
struct DaemonProcess: Sendable, CustomStringConvertible {
    let pid: pid_t

    /// Reads the pid file; nil when it is absent or holds no number.
    init?(pidFile: String) {
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0
        else { return nil }
        self.pid = pid
    }

    init(pid: pid_t) { self.pid = pid }

    var description: String { "daemon \(pid)" }

    /// True while the process exists and is not a zombie.
    var isAlive: Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
        return state != "Z" && state != "X"
    }

    func send(_ signal: Int32) {
        kill(pid, signal)
    }

    /// Polls until the process has gone; returns false if it still runs after `timeout`.
    func waitForExit(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isAlive {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return true
    }

    /// The blocking form of `waitForExit`, for `defer` blocks.
    func waitForExitBlocking(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isAlive {
            if ContinuousClock.now >= deadline { return false }
            usleep(50_000)
        }
        return true
    }
}
