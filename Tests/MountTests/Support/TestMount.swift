import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One fpfs mount started by a test through the real binary.
///
/// Every test that mounts writes `defer { mount.unmount() }` right after mounting: `fpfs unmount`,
/// then `fusermount3 -u -z` if the mount is still there, then SIGKILL for a daemon that outlives
/// its mount. So no test leaves anything in /proc/mounts, whether it passed, failed or threw.
final class TestMount: @unchecked Sendable {
    let remote: String
    let mountpoint: String
    let cacheDir: String
    /// The daemon, read from `CACHE_DIR/daemon.pid` once the mount was up.
    let daemon: DaemonProcess?
    /// Guards `unmounted`.
    private let lock = NSLock()
    private var unmounted = false

    /// A mount made by `start`, or by a test's own `fpfs mount` command line.
    init(remote: String, mountpoint: String, cacheDir: String) {
        self.remote = remote
        self.mountpoint = mountpoint
        self.cacheDir = cacheDir
        daemon = DaemonProcess(pidFile: cacheDir + "/daemon.pid")
    }

    /// Runs `fpfs mount REMOTE MOUNTPOINT --cache-dir CACHE OPTIONS…` and returns once it exited 0
    /// and /proc/mounts shows the mount; otherwise cleans up whatever it left and throws.
    static func start(
        remote: String, mountpoint: String, cacheDir: String, options: [String] = [],
        environment: [String: String] = [:], timeout: Duration = .seconds(60)
    ) async throws -> TestMount {
        var command = try mountCommand(
            remote: remote, mountpoint: mountpoint, cacheDir: cacheDir, options: options, timeout: timeout)
        command.environment = environment
        let output = await command.run()
        let mount = TestMount(remote: remote, mountpoint: mountpoint, cacheDir: cacheDir)
        guard output.succeeded else {
            mount.unmount()
            throw MountTestFailure("fpfs mount failed: \(output)")
        }
        guard MountTable.entries(at: mountpoint).contains(where: { $0.type == "fuse.fpfs" }) else {
            mount.unmount()
            throw MountTestFailure("fpfs mount exited 0 but /proc/mounts shows no fuse.fpfs mount at \(mountpoint)")
        }
        return mount
    }

    /// Mounts `remote` on the scratch directory's mountpoint with its cache directory.
    static func start(
        remote: String, in scratch: Scratch, options: [String] = [], environment: [String: String] = [:]
    ) async throws -> TestMount {
        try await start(
            remote: remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache, options: options,
            environment: environment)
    }

    /// The `fpfs mount` command line the tests use, for tests that look at its failures.
    static func mountCommand(
        remote: String, mountpoint: String, cacheDir: String, options: [String] = [],
        timeout: Duration = .seconds(60)
    ) throws -> Command {
        try FpfsBinary.command(["mount", remote, mountpoint, "--cache-dir", cacheDir] + options, timeout: timeout)
    }

    /// The absolute path of `relative` inside the mount.
    func path(_ relative: String) -> String {
        relative.isEmpty ? mountpoint : mountpoint + "/" + relative
    }

    /// Unmounts once (later calls return nil) and returns what `fpfs unmount` did; blocking, so it
    /// can run in a `defer`.
    @discardableResult
    func unmount() -> Command.Output? {
        lock.lock()
        let first = !unmounted
        unmounted = true
        lock.unlock()
        guard first else { return nil }

        // Not waiting for uploads, as before --unmount-wait: a test that wants them on the remote syncs.
        let output = (try? FpfsBinary.command(["unmount", mountpoint, "--unmount-wait", "0"], timeout: .seconds(30)))?
            .runBlocking()
        if MountTable.isMounted(mountpoint) {
            _ = Command(["fusermount3", "-u", "-z", mountpoint], timeout: .seconds(20)).runBlocking()
        }
        let daemon = self.daemon ?? DaemonProcess(pidFile: cacheDir + "/daemon.pid")
        if let daemon, !daemon.waitForExitBlocking(timeout: .seconds(10)) {
            daemon.send(SIGKILL)
            _ = daemon.waitForExitBlocking(timeout: .seconds(5))
        }
        return output
    }

    /// The last `lines` lines of the daemon's log (`CACHE/fpfs.log`), for failure messages: the
    /// scratch folder, and the log with it, is gone once the test ends.
    func logTail(lines: Int = 40) -> String {
        let log = (try? String(contentsOfFile: cacheDir + "/fpfs.log", encoding: .utf8)) ?? "(no fpfs.log)"
        return log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// `fpfs status MOUNTPOINT --json`, decoded.
    func status() async throws -> MountStatus {
        let output = try await FpfsBinary.command(["status", mountpoint, "--json"], timeout: .seconds(20)).check()
        do {
            return try JSONDecoder().decode(MountStatus.self, from: output.stdoutData)
        } catch {
            throw MountTestFailure("cannot decode `fpfs status --json` output \(output.stdout): \(error)")
        }
    }

    /// `fpfs sync MOUNTPOINT`: returns once every local change is on the remote; throws if they
    /// are not within `seconds`.
    func sync(seconds: Int = 120) async throws {
        try await FpfsBinary.command(
            ["sync", mountpoint, "--timeout", String(seconds)], timeout: .seconds(seconds + 30)
        ).check()
    }

    /// The value of the extended attribute `name` of `relative`, read with getfattr.
    func xattr(_ name: String, of relative: String) async throws -> String {
        let output = try await Command(["getfattr", "--only-values", "-n", name, "--", path(relative)]).check()
        return output.stdout
    }

    /// `du -B1` of `relative`: bytes of disk it uses on this machine.
    func diskUsage(of relative: String) async throws -> Int {
        let output = try await Command(["du", "-B1", "--", path(relative)]).check()
        guard let first = output.stdout.split(separator: "\t").first, let bytes = Int(first) else {
            throw MountTestFailure("cannot read du output \(output.stdout)")
        }
        return bytes
    }
}
