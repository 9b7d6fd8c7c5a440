import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `fpfs unmount MOUNTPOINT`: unmounts and waits for the daemon to finish.
struct UnmountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount", abstract: "Unmount an fpfs mount and wait for its daemon to exit.",
        discussion: """
            First waits, up to --unmount-wait, for the mount's changes to reach the remote; what has \
            not stays queued in the cache folder, and the next mount with it sends it. Scripts that \
            must know run `fpfs sync` first.
            """)

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Option(
        help:
            "How long to wait for changes to reach the remote before unmounting (seconds, or 90s, 1500ms; 0: do not wait)."
    )
    var unmountWait = "60"

    func run() async throws {
        do {
            let bound = try UnmountWait.parse(unmountWait)
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
            let report = await UnmountWait(mountpoint: path, bound: bound).run()
            if let failure = MountTable.fusermountUnmount(path) {
                throw CommandFailure("cannot unmount '\(path)': \(failure)")
            }
            if let report, report.uploads.pending > 0 { UnmountWait.say(UnmountWait.queuedMessage(report)) }
            if let pid = report?.pid { try await waitForExit(pid) }
        } catch let failure as CommandFailure {
            throw CommandFailure.exit(failure.message)
        }
    }

    /// How long the daemon may do nothing before `unmount` stops waiting for it.
    static let idleLimit: Duration = .seconds(30)
    /// How long `unmount` waits for a daemon that keeps working: a bound, so that it never hangs.
    static let workLimit: Duration = .seconds(600)

    /// Waits for the daemon to finish writing its state and exit, for as long as it works: it
    /// makes its cache durable last (DECISIONS 154), which after a large cold read can take longer
    /// on a slow disk than any fixed bound (DECISIONS 160). Gives up once it has neither used CPU
    /// nor waited for the disk for `idleLimit`, or after `workLimit`. A zombie has finished: it
    /// waits only to be reaped by PID 1, which in a container may take a second or more.
    private func waitForExit(_ pid: pid_t) async throws {
        let start = ContinuousClock.now
        var lastLook = start
        var lastWork = start
        var previous = ProcessActivity(of: pid)
        var told = false
        while ProcessActivity.isRunning(pid) {
            try await Task.sleep(for: .milliseconds(10))
            let now = ContinuousClock.now
            guard now - lastLook >= .milliseconds(250) else { continue }
            lastLook = now
            let current = ProcessActivity(of: pid)
            if current.hasWorked(since: previous) { lastWork = now }
            previous = current
            if now - lastWork >= Self.idleLimit {
                throw CommandFailure(
                    "unmounted, but the daemon (pid \(pid)) is still running and has done nothing for \(Self.idleLimit)"
                )
            }
            if now - start >= Self.workLimit {
                throw CommandFailure("unmounted, but the daemon (pid \(pid)) is still running after \(Self.workLimit)")
            }
            if !told, now - start >= .seconds(5) {
                told = true
                FileHandle.standardError.write(
                    Data("fpfs: unmounted; waiting for the daemon (pid \(pid)) to finish writing to disk\n".utf8))
            }
        }
    }
}
