import Foundation

/// What a process is doing, read from /proc: the CPU it has used, and whether one of its threads
/// waits for the disk; for `fpfs unmount`, which waits for the daemon as long as it works
/// (DECISIONS 160).
struct ProcessActivity {
    /// User and system clock ticks used so far.
    let cpuTicks: UInt64
    /// True when one of its threads is in uninterruptible sleep, which is a disk wait.
    let waitsForDisk: Bool

    init(of pid: pid_t) {
        guard let fields = Self.runningStatFields(of: pid) else {
            (cpuTicks, waitsForDisk) = (0, false)
            return
        }
        // After the name: state is field 3, utime 14, stime 15.
        cpuTicks = fields.count > 12 ? (UInt64(fields[11]) ?? 0) + (UInt64(fields[12]) ?? 0) : 0
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        waitsForDisk = threads.contains { Self.statFields("/proc/\(pid)/task/\($0)/stat")?.first == "D" }
    }

    /// True when the process did something since `earlier`: used CPU, or waits for the disk now.
    func hasWorked(since earlier: ProcessActivity) -> Bool {
        cpuTicks != earlier.cpuTicks || waitsForDisk
    }

    /// True while `pid` exists and has not exited (a zombie has: it only waits to be reaped);
    /// cheaper than reading the whole activity.
    static func isRunning(_ pid: pid_t) -> Bool { runningStatFields(of: pid) != nil }

    private static func runningStatFields(of pid: pid_t) -> [Substring]? {
        guard let fields = statFields("/proc/\(pid)/stat"), let state = fields.first, state != "Z", state != "X"
        else { return nil }
        return fields
    }

    /// The fields of a stat file after the command name (which may hold spaces and parentheses).
    private static func statFields(_ path: String) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: path, encoding: .utf8), let nameEnd = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(after: nameEnd)...].split(separator: " ")
    }
}
