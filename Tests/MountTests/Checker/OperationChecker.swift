import Foundation
import TestServers

#if canImport(Glibc)
    import Glibc
#endif

/// Runs one sequence of the operation checker (DECISIONS 210–213) on a real mount: draws each
/// step from the model's state, does it (system calls on the mount, changes in the remote's
/// folder, kill -9 of the daemon, the remote going away), holds each result of the mount to what
/// the model predicts, and at checkpoints (after a racing remote change, and at the end) waits
/// for `fpfs sync`, then compares the mount, the remote and the model.
///
/// Synchronous by design: it runs on a thread of its own (`run(on:)`), because every step is a
/// blocking system call on the mount.
final class OperationChecker: @unchecked Sendable {
    struct Summary: Sendable {
        var operations = 0
        var checkpoints = 0
        var kills = 0
        var outages = 0
        var races = 0

        mutating func add(_ other: Summary) {
            operations += other.operations
            checkpoints += other.checkpoints
            kills += other.kills
            outages += other.outages
            races += other.races
        }
    }

    let seed: UInt64
    let operations: Int
    let remote: WritableRemote
    private(set) var mount: TestMount?
    private var model = CheckerModel()
    private var generator: OperationGenerator
    private var descriptors: [Int: Int32] = [:]
    private var away = false
    /// Operations left in the open race window, or nil when none is open.
    private var raceLeft: Int?
    /// When the daemon was last killed: what it had sent may still land on a server after it died
    /// (Apache took a killed daemon's `PUT` a second late, DECISIONS 319).
    private var lastKill: ContinuousClock.Instant?
    /// How long a killed daemon's requests are given to land before the remote is compared or
    /// changed: the model cannot tell when they do. The new daemon meets them meanwhile.
    private static let landingTime = Duration.seconds(2)
    private var log: [String] = []
    private(set) var summary = Summary()

    /// `FPFS_CHECK_LOG_LEVEL` (debug, say) shows more of what the daemon did in a replay's log.
    static let mountOptions =
        ["--poll-interval", "0", "--remote-timeout", "3"]
        + (ProcessInfo.processInfo.environment["FPFS_CHECK_LOG_LEVEL"].map { ["--log-level", $0] } ?? [])

    init(seed: UInt64, operations: Int, remote: WritableRemote, disruptions: Bool = true) {
        self.seed = seed
        self.operations = operations
        self.remote = remote
        generator = OperationGenerator(seed: seed, disruptions: disruptions)
    }

    /// Runs the whole sequence on a thread of its own; throws a `CheckerFailure` with the seed,
    /// the steps and what did not hold.
    func run() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            Thread {
                do {
                    try self.runBlocking()
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }.start()
        }
    }

    /// Unmounts whatever the sequence left mounted; for a `defer`.
    func unmount() {
        closeDescriptors()
        mount?.unmount()
    }

    private func runBlocking() throws {
        for (path, entry) in generator.initialTree() {
            let absolute = remote.folder + "/" + path
            switch entry {
            case .directory:
                try FileManager.default.createDirectory(atPath: absolute, withIntermediateDirectories: true)
            case .file(let bytes): try Data(bytes).write(to: URL(fileURLWithPath: absolute))
            }
            model.addInitial(path, entry)
        }
        // A server's own user (Apache's www-data) must be able to write in what was made here.
        if remote.kind != .folder { try WebDAVTestServer.open(URL(fileURLWithPath: remote.folder)) }
        try mountAgain()
        for _ in 0..<operations {
            let operation = generator.next(model, away: away, racing: raceLeft != nil)
            try perform(operation)
            summary.operations += 1
            if let left = raceLeft {
                if left <= 0 {
                    raceLeft = nil
                    try checkpoint("the race's checkpoint")
                } else {
                    raceLeft = left - 1
                }
            }
        }
        raceLeft = nil
        if away { try perform(.recover) }
        try checkpoint("the final checkpoint")
    }

    // MARK: Steps

    private func perform(_ operation: CheckerOperation) throws {
        let number = summary.operations + 1
        switch operation {
        case .sync:
            log.append("\(number). \(operation)")
            try checkpoint("a checkpoint")
        case .remoteWrite(_, _, let calm), .remoteDelete(_, let calm), .remoteRename(_, _, let calm):
            if calm { try checkpoint("a checkpoint before a calm remote change") }
            letTheKilledDaemonsRequestsLand()
            let remoteContents = Dictionary(
                CheckerModel.paths(of: operation).compactMap { path in
                    remoteFile(path).map { (path, $0) }
                }, uniquingKeysWith: { first, _ in first })
            guard changeRemote(operation) else {
                log.append("\(number). \(operation): not possible on the remote, skipped")
                return
            }
            log.append("\(number). \(operation)")
            if calm {
                try signal()
                model.applyCalmRemote(operation)
            } else {
                model.contest(operation, remoteContents: remoteContents)
                summary.races += 1
                raceLeft = generator.raceWindow()
            }
        case .kill:
            try kill()
            log.append("\(number). \(operation)")
        case .outage:
            try remote.goAway()
            away = true
            summary.outages += 1
            log.append("\(number). \(operation)")
        case .recover:
            try blocking { try await self.remote.comeBack() }
            away = false
            log.append("\(number). \(operation), then fpfs signal")
            // As a user would: the mount learns at once that the remote is back.
            try signal()
        default:
            var closed: (path: String, content: [UInt8])?
            if case .close(let handle) = operation { closed = model.file(ofHandle: handle) }
            let expected = model.outcome(of: operation)
            let actual = call(operation)
            let racing = raceLeft != nil
            // Offline, what needs the remote (a file's bytes, a folder's first listing) may fail
            // with EHOSTDOWN, and a remote item in a folder never listed is not known (ENOENT:
            // SEMANTICS, Offline; DECISIONS 182); nothing else may.
            let offline = away && (actual == EHOSTDOWN || (actual == ENOENT && expected != ENOENT))
            // Likewise a creation there over a name only the remote holds succeeds (it would go up
            // under a conflict name, as SEMANTICS says); the model never made it, so the checker
            // takes it back at once.
            if away, actual == 0, expected == EEXIST, let undone = undoCreation(operation) {
                log.append("\(number). \(operation) = ok (offline: the remote's name is not known here; undone)")
                guard undone == 0 else { throw failure(["undoing \(operation) returned \(Self.name(undone))"]) }
                return
            }
            log.append(
                "\(number). \(operation) = \(Self.name(actual))\(racing ? " (in a race)" : offline ? " (offline)" : "")"
            )
            if offline {
                return
            } else if racing {
                model.contest(pathsOf: operation)
            } else if actual != expected {
                throw failure(["\(operation) returned \(Self.name(actual)), POSIX says \(Self.name(expected))"])
            }
            if actual == 0 && expected == 0 {
                model.apply(operation)
            } else if case .close = operation {
                model.apply(operation)
            }
            // What a close returned shows at once (issue 51 item 9 showed size 0 for seconds).
            if let closed, !racing, let mount {
                var status = stat()
                let size = lstat(mount.path(closed.path), &status) == 0 ? Int(status.st_size) : -1
                if size != closed.content.count {
                    throw failure([
                        "after \(operation), stat of \(closed.path) says \(size) bytes, not \(closed.content.count)"
                    ])
                }
            }
        }
    }

    /// Removes what a `create` or `mkdir` just made (unlinked before its handle closes, so that
    /// nothing of it is sent); 0 or the errno, nil for another operation.
    private func undoCreation(_ operation: CheckerOperation) -> Int32? {
        guard let mount else { return nil }
        switch operation {
        case .create(let path, let handle):
            let removed = unlink(mount.path(path)) == 0 ? 0 : errno
            if let fd = descriptors.removeValue(forKey: handle) { close(fd) }
            return removed
        case .mkdir(let path):
            return rmdir(mount.path(path)) == 0 ? 0 : errno
        default:
            return nil
        }
    }

    /// Does an operation on the mount; returns 0 or the errno.
    private func call(_ operation: CheckerOperation) -> Int32 {
        func result(_ value: Int32) -> Int32 { value < 0 ? errno : 0 }
        guard let mount else { return ENOTCONN }
        switch operation {
        case .create(let path, let handle):
            let fd = open(mount.path(path), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
            if fd >= 0 { descriptors[handle] = fd }
            return result(fd)
        case .open(let path, let truncate, let handle):
            let fd = open(mount.path(path), O_WRONLY | O_CLOEXEC | (truncate ? O_TRUNC : 0))
            if fd >= 0 { descriptors[handle] = fd }
            return result(fd)
        case .write(let handle, let offset, let bytes):
            guard let fd = descriptors[handle] else { return EBADF }
            var done = 0
            while done < bytes.count {
                let count = bytes[done...].withUnsafeBytes {
                    pwrite(fd, $0.baseAddress, $0.count, off_t(offset + done))
                }
                if count < 0 { return errno }
                done += count
            }
            return 0
        case .fsync(let handle):
            guard let fd = descriptors[handle] else { return EBADF }
            return result(fsync(fd))
        case .close(let handle):
            guard let fd = descriptors.removeValue(forKey: handle) else { return EBADF }
            return result(close(fd))
        case .truncate(let path, let size): return result(truncate(mount.path(path), off_t(size)))
        case .rename(let from, let to): return result(rename(mount.path(from), mount.path(to)))
        case .unlink(let path): return result(unlink(mount.path(path)))
        case .mkdir(let path): return result(mkdir(mount.path(path), 0o755))
        case .rmdir(let path): return result(rmdir(mount.path(path)))
        case .setxattr(let path, let name, let value):
            // Swift's Glibc module has no <sys/xattr.h>: setfattr does the call.
            let output = Command(["setfattr", "-n", name, "-v", value, "--", mount.path(path)]).runBlocking()
            if output.succeeded { return 0 }
            let messages: [(String, Int32)] = [("No such file", ENOENT), ("Host is down", EHOSTDOWN)]
            return messages.first { output.stderr.contains($0.0) }?.1 ?? EIO
        case .sync, .remoteWrite, .remoteDelete, .remoteRename, .kill, .outage, .recover:
            return 0
        }
    }

    /// Makes a change in the remote's folder, behind the mount's back; false when the remote's
    /// state does not allow it (a file not uploaded yet, a folder in the way).
    private func changeRemote(_ operation: CheckerOperation) -> Bool {
        let manager = FileManager.default
        func folderExists(_ path: String) -> Bool {
            var isFolder: ObjCBool = false
            return manager.fileExists(atPath: remote.folder + "/" + path, isDirectory: &isFolder) && isFolder.boolValue
        }
        switch operation {
        case .remoteWrite(let path, let bytes, _):
            guard folderExists(CheckerModel.parent(of: path)), !folderExists(path) else { return false }
            let absolute = remote.folder + "/" + path
            guard (try? Data(bytes).write(to: URL(fileURLWithPath: absolute))) != nil else { return false }
            // A server's own user (Apache's www-data) must be able to replace it.
            if remote.kind != .folder { chmod(absolute, 0o666) }
            return true
        case .remoteDelete(let path, _):
            guard remoteFile(path) != nil else { return false }
            return unlink(remote.folder + "/" + path) == 0
        case .remoteRename(let from, let to, _):
            guard remoteFile(from) != nil, folderExists(CheckerModel.parent(of: to)), !folderExists(to) else {
                return false
            }
            return rename(remote.folder + "/" + from, remote.folder + "/" + to) == 0
        default:
            return false
        }
    }

    /// The content of a file in the remote's folder, or nil when there is no file there.
    private func remoteFile(_ path: String) -> [UInt8]? {
        var status = stat()
        let absolute = remote.folder + "/" + path
        guard lstat(absolute, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
            let data = FileManager.default.contents(atPath: absolute)
        else { return nil }
        return [UInt8](data)
    }

    private func kill() throws {
        guard let old = mount else { return }
        let daemon = old.daemon ?? DaemonProcess(pidFile: old.cacheDir + "/daemon.pid")
        daemon?.send(SIGKILL)
        lastKill = .now
        if let daemon, !daemon.waitForExitBlocking(timeout: .seconds(10)) {
            throw failure(["the daemon survived SIGKILL"])
        }
        closeAllHandles()
        // Clears the dead mount (fpfs unmount fails, then fusermount3 -u -z).
        old.unmount()
        mount = nil
        summary.kills += 1
        try mountAgain()
    }

    private func mountAgain() throws {
        let command = try TestMount.mountCommand(
            remote: remote.argument, mountpoint: remote.scratch.mountpoint, cacheDir: remote.scratch.cache,
            options: Self.mountOptions)
        let output = command.runBlocking()
        let started = TestMount(
            remote: remote.argument, mountpoint: remote.scratch.mountpoint, cacheDir: remote.scratch.cache)
        mount = started
        guard output.succeeded, MountTable.isMounted(started.mountpoint) else {
            throw failure(["fpfs mount failed: \(output)"])
        }
    }

    private func closeAllHandles() {
        let open = model.openHandles
        closeDescriptors()
        model.closeAllHandles()
        if !open.isEmpty { log.append("   (closes \(open.map { "#\($0)" }.joined(separator: ", ")))") }
    }

    private func closeDescriptors() {
        for fd in descriptors.values { close(fd) }
        descriptors.removeAll()
    }

    // MARK: Checkpoints

    private func sync() throws {
        guard let mount else { return }
        let output = try FpfsBinary.command(
            ["sync", mount.mountpoint, "--timeout", "60"], timeout: .seconds(90)
        ).runBlocking()
        guard output.succeeded else {
            let status = (try? FpfsBinary.command(["status", mount.mountpoint]).runBlocking())?.stdout ?? ""
            throw failure(["fpfs sync did not drain: \(output)", "fpfs status:\n\(status)"])
        }
    }

    private func signal() throws {
        guard let mount else { return }
        let output = try FpfsBinary.command(
            ["signal", mount.mountpoint, "--timeout", "60"], timeout: .seconds(90)
        ).runBlocking()
        guard output.succeeded else { throw failure(["fpfs signal failed: \(output)"]) }
    }

    private func checkpoint(_ name: String) throws {
        guard let mount else { return }
        closeAllHandles()
        letTheKilledDaemonsRequestsLand()
        log.append("   (\(name): fpfs sync, fpfs signal, fpfs sync, compare)")
        try sync()
        try signal()
        try sync()
        summary.checkpoints += 1
        let shown = try TreeSnapshot.read(mount.mountpoint)
        let held = try TreeSnapshot.read(remote.folder)
        var problems = TreeSnapshot.differences(shown, "the mount", held, "the remote")
        problems += model.reconcile(with: shown)
        for (path, name, value) in model.expectedAttributes {
            let output = Command(["getfattr", "--only-values", "-n", name, "--", mount.path(path)]).runBlocking()
            let found = output.succeeded ? output.stdout : output.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
            if found != value { problems.append("\(path): \(name) should be \(value), the mount has \(found)") }
        }
        if !problems.isEmpty { throw failure(problems) }
    }

    /// Waits out what is left of `landingTime` since the last kill, on a remote that is a server.
    private func letTheKilledDaemonsRequestsLand() {
        guard remote.kind != .folder, let killed = lastKill else { return }
        lastKill = nil
        let left = Self.landingTime - (ContinuousClock.now - killed)
        guard left > .zero else { return }
        Thread.sleep(forTimeInterval: Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18)
    }

    // MARK: Reports

    private func failure(_ problems: [String]) -> CheckerFailure {
        CheckerFailure(
            seed: seed, kind: remote.kind, steps: log, problems: problems, logTail: mount?.logTail(lines: Self.mountOptions.contains("--log-level") ? 5000 : 120) ?? "",
            summary: summary)
    }

    static func name(_ code: Int32) -> String {
        switch code {
        case 0: "ok"
        case ENOENT: "ENOENT"
        case EEXIST: "EEXIST"
        case ENOTDIR: "ENOTDIR"
        case EISDIR: "EISDIR"
        case ENOTEMPTY: "ENOTEMPTY"
        case EINVAL: "EINVAL"
        case EBADF: "EBADF"
        case EIO: "EIO"
        case ENOTCONN: "ENOTCONN"
        case EHOSTDOWN: "EHOSTDOWN"
        case ENOSPC: "ENOSPC"
        default: "errno \(code)"
        }
    }
}

/// Runs an async call from the checker's own thread (never from a cooperative one), waiting.
private func blocking(_ body: @escaping @Sendable () async throws -> Void) throws {
    final class Outcome: @unchecked Sendable { var error: Error? }
    let outcome = Outcome()
    let done = DispatchSemaphore(value: 0)
    Task {
        do { try await body() } catch { outcome.error = error }
        done.signal()
    }
    done.wait()
    if let error = outcome.error { throw error }
}
