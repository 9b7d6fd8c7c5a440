import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `fpfs unmount MOUNTPOINT`: unmounts and waits for the daemon to finish.
struct UnmountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount", abstract: "Unmount an fpfs mount and wait for its daemon to exit.")

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    func run() async throws {
        do {
            let path = CommandLinePath.absolute(mountpoint)
            guard let mount = MountTable.mount(at: path), mount.type == "fuse.fpfs" else {
                throw CommandFailure("'\(path)' is not an fpfs mount")
            }
            switch MountTable.daemonState(at: path) {
            case .answering: break
            case .gone:
                if let failure = MountTable.fusermountUnmount(path, lazy: true) {
                    throw CommandFailure("cannot unmount '\(path)': \(failure)")
                }
                return
            case .notAnswering:
                // Lazily: the probe's own request still holds the mount until this process exits.
                // The daemon sees the unmount once it runs again; what it had not sent to the
                // remote stays journalled in the cache folder.
                if let failure = MountTable.fusermountUnmount(path, lazy: true) {
                    throw CommandFailure("cannot unmount '\(path)' (its daemon does not answer): \(failure)")
                }
                FileHandle.standardError.write(
                    Data("fpfs: unmounted '\(path)'; its daemon did not answer and may still be running\n".utf8))
                return
            }
            let pid = daemonPID(of: path)
            if let failure = MountTable.fusermountUnmount(path) {
                throw CommandFailure("cannot unmount '\(path)': \(failure)")
            }
            if let pid { try await waitForExit(pid) }
        } catch let failure as CommandFailure {
            throw CommandFailure.exit(failure.message)
        }
    }

    private func daemonPID(of path: String) -> pid_t? {
        guard let answer = try? ControlClient.send("status", to: path),
            let report = try? JSONDecoder().decode(StatusReport.self, from: answer)
        else { return nil }
        return report.pid
    }

    /// Waits (up to 30 s) for the daemon to finish writing its state and exit. A zombie has
    /// finished: it waits only to be reaped by PID 1, which in a container may take a second or
    /// more.
    private func waitForExit(_ pid: pid_t) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while Self.isRunning(pid) {
            guard ContinuousClock.now < deadline else {
                throw CommandFailure("unmounted, but the daemon (pid \(pid)) is still running")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// True while `pid` exists and has not exited (is not a zombie).
    private static func isRunning(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let nameEnd = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(after: nameEnd)...].first { $0 != " " }
        return state != "Z" && state != "X"
    }
}
