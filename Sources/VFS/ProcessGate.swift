import Glibc
import Synchronization

/// Keeps listed processes from materializing content (ARCHITECTURE §3, the non-materializing process
/// names of the File Provider model).
///
/// A process is listed when the file name of /proc/PID/exe, or /proc/PID/comm (which the kernel
/// cuts to 15 bytes), equals a listed name exactly. Listed processes may stat, list, read xattrs and
/// read bytes already local; a read that would need a download is refused with EDEADLK, and each
/// refusal is counted by name for `fpfs status`.
final class ProcessGate: Sendable {
    /// The indexers and thumbnailers common on Linux desktops, which would otherwise download a
    /// whole remote while crawling it.
    static let defaultNames: Set<String> = [
        "updatedb", "updatedb.plocate", "plocate", "mlocate", "locate",
        "tracker-miner-fs", "tracker-miner-fs-3", "tracker-extract", "tracker-extract-3",
        "localsearch-3", "localsearch-extractor-3", "localsearch",
        "baloo_file", "baloo_file_extractor", "baloorunner",
        "gnome-thumbnailer", "gnome-desktop-thumbnailer", "totem-video-thumbnailer", "evince-thumbnailer",
        "gdk-pixbuf-thumbnailer", "ffmpegthumbnailer", "tumblerd", "kioworker", "thumbnail.so",
    ]

    let names: Set<String>
    private let refusals = Mutex<[String: Int]>([:])

    /// The last answer and when it was read: a reader of a cold file is asked about at its open
    /// and again at its first read, and a process walking a tree asks for every file, each time
    /// with four system calls on /proc. A process that became a listed one (by `exec`) within
    /// `answerLifetime` of an answer may still download that long.
    private let lastAnswer = Mutex<(pid: Int32, name: String?, time: ContinuousClock.Instant)?>(nil)
    static let answerLifetime: Duration = .seconds(1)

    init(names: Set<String>) { self.names = names }

    /// The listed name `pid` runs under, or nil when it may download.
    func blockedName(of pid: Int32) -> String? {
        guard !names.isEmpty, pid > 0 else { return nil }
        let now = ContinuousClock.now
        if let last = lastAnswer.withLock({ $0 }), last.pid == pid, now - last.time < Self.answerLifetime {
            return last.name
        }
        let name = readBlockedName(of: pid)
        lastAnswer.withLock { $0 = (pid, name, now) }
        return name
    }

    private func readBlockedName(of pid: Int32) -> String? {
        if let executable = Self.read(pid, "exe", link: true) {
            let name = String(executable.split(separator: "/").last ?? "")
            if names.contains(name) { return name }
            // A deleted or replaced executable reads as "NAME (deleted)".
            if name.hasSuffix(" (deleted)"), names.contains(String(name.dropLast(" (deleted)".count))) {
                return String(name.dropLast(" (deleted)".count))
            }
        }
        if let comm = Self.read(pid, "comm", link: false) {
            let name = String(comm.dropLast(comm.hasSuffix("\n") ? 1 : 0))
            if names.contains(name) { return name }
        }
        return nil
    }

    /// The target of the link /proc/PID/NAME, or the start of that file: a `readlink` or an
    /// `open` and a `read`, with no Foundation machinery, since every open of a cloud file and
    /// every read that misses asks.
    private static func read(_ pid: Int32, _ name: String, link: Bool) -> Substring? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(PATH_MAX)) { buffer -> Substring? in
            let path = "/proc/\(pid)/\(name)"
            let count: Int
            if link {
                count = readlink(path, buffer.baseAddress!, buffer.count)
            } else {
                let descriptor = open(path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { return nil }
                defer { close(descriptor) }
                count = Glibc.read(descriptor, buffer.baseAddress!, buffer.count)
            }
            guard count > 0 else { return nil }
            return Substring(decoding: UnsafeBufferPointer(rebasing: buffer[..<count]), as: UTF8.self)
        }
    }

    /// Counts a refused read for `name`.
    func recordRefusal(of name: String) {
        refusals.withLock { $0[name, default: 0] += 1 }
    }

    /// Refused reads by process name.
    var refusalCounts: [String: Int] { refusals.withLock { $0 } }
}
