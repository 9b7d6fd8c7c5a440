import CSpawn
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Starts the mount daemon as a new process and waits for it to say it is ready.
///
/// The daemon is this executable run with `--foreground --ready-fd 3`, spawned with posix_spawn
/// (no fork once threads exist) in a session of its own, stdin from /dev/null and its output to
/// the log file, and no other descriptor of its caller's: a file the caller left open would stay
/// open (and its disk space taken) for the mount's whole life. It writes "ready" or
/// "error: MESSAGE" to fd 3; end of file without either means it died, and the log says why.
/// Secrets (a password, S3 keys) reach it as fd 4 (`--secrets-fd 4`), never in its environment or
/// arguments.
enum DaemonLauncher {
    /// Spawns the daemon and returns once it is ready; throws the daemon's message otherwise.
    static func launch(arguments: [String], secrets: [String: String], logFile: URL, timeout: Duration) throws {
        let secretsFD = try SecretHandOff.pipe(holding: secrets).map(movedAboveTargets)
        defer { if let secretsFD { close(secretsFD) } }
        let arguments = arguments + (secretsFD == nil ? [] : ["--secrets-fd", "4"])
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw CommandFailure("cannot create a pipe: \(errno)") }
        let readEnd = pipeFDs[0]
        // Close-on-exec: only the dup2'ed copy (fd 3) reaches the daemon.
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        defer { close(readEnd) }
        let writeEnd = try movedAboveTargets(pipeFDs[1])

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logFile.path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 3)
        if let secretsFD { posix_spawn_file_actions_adddup2(&actions, secretsFD, 4) }
        posix_spawn_file_actions_addclosefrom_np(&actions, secretsFD == nil ? 4 : 5)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, posixSpawnSetSID)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        close(writeEnd)
        guard status == 0 else { throw CommandFailure("cannot start the daemon: \(String(cString: strerror(status)))") }

        var message = readMessage(from: readEnd, timeout: timeout)
        while let line = message, line.hasPrefix("warning: ") {
            var standardError = StandardError()
            print("fpfs: \(line)", to: &standardError)
            message = readMessage(from: readEnd, timeout: timeout)
        }
        switch message {
        case .some(let line) where line == "ready":
            return
        case .some(let line) where line.hasPrefix("error: "):
            waitForExit(pid)
            throw CommandFailure(String(line.dropFirst("error: ".count)))
        case .some(let line):
            kill(pid, SIGTERM)
            throw CommandFailure("the daemon said '\(line)' (log: \(logFile.path))")
        case .none:
            var exitStatus: Int32 = 0
            if waitpid(pid, &exitStatus, WNOHANG) == 0 {
                kill(pid, SIGTERM)
                throw CommandFailure("the daemon did not become ready in time (log: \(logFile.path))")
            }
            throw CommandFailure("the daemon exited before the mount was ready (log: \(logFile.path))")
        }
    }

    /// glibc's POSIX_SPAWN_SETSID (2.26+), hidden from Swift behind _GNU_SOURCE: the daemon gets a
    /// session of its own, so a terminal's hangup does not reach it.
    private static let posixSpawnSetSID: Int16 = 0x80

    /// `descriptor` moved to a number above the daemon's 0–4 (close-on-exec), so that no file
    /// action overwrites the source of a later one: a secrets pipe made while 3 and 4 were free
    /// got 3, `dup2(ready, 3)` replaced it, and the daemon read no password (DECISIONS 315).
    private static func movedAboveTargets(_ descriptor: Int32) throws -> Int32 {
        let moved = fcntl(descriptor, F_DUPFD_CLOEXEC, 5)
        close(descriptor)
        guard moved >= 0 else { throw CommandFailure("cannot start the daemon: no descriptor left (\(errno))") }
        return moved
    }

    /// The next line the daemon writes, or nil on end of file or timeout. Reads one byte at a
    /// time so that nothing after the line is consumed.
    private static func readMessage(from fd: Int32, timeout: Duration) -> String? {
        var collected: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let remaining = deadline - ContinuousClock.now
            let milliseconds = Int32(
                max(1, remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000))
            guard poll(&poller, 1, milliseconds) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 1)
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            collected += buffer.prefix(count)
            if let newline = collected.firstIndex(of: UInt8(ascii: "\n")) {
                return String(decoding: collected[..<newline], as: UTF8.self)
            }
        }
        return collected.isEmpty ? nil : String(decoding: collected, as: UTF8.self)
    }

    private static func waitForExit(_ pid: pid_t) {
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }
}
