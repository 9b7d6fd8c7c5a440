import CSpawn
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Starts the tools and servers of the tests with posix_spawn: stdin from /dev/null, stdout and
/// stderr where the caller says, no other descriptor of the test process, default handling of the
/// signals tests send, and optionally a process group of its own, so a server and its workers can
/// be stopped together.
///
/// Tests start every child here, never with Foundation's `Process` (DECISIONS 113). `Process`
/// learns that a child ended when a socket the child holds reaches end-of-file, and a child
/// another thread starts at the same moment can inherit that socket: the waiter then waits for
/// the stranger too. A test process's cooperative pool has two threads here, so two such waits
/// stop every in-process mount and every test.
public enum ChildProcess {
    /// Where a child's output goes.
    public enum Output: Sendable {
        /// An open descriptor of the parent.
        case descriptor(Int32)
        /// A file, created if missing and appended to.
        case file(String)
        /// The same place as the child's stdout.
        case stdout
    }

    /// Starts `arguments` (the program looked up in PATH) and returns its pid; throws a message
    /// naming the program when it cannot start.
    public static func spawn(
        _ arguments: [String], stdout: Output, stderr: Output, environment: [String: String]? = nil,
        newProcessGroup: Bool = false
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        for (target, output) in [(Int32(1), stdout), (2, stderr)] {
            switch output {
            case .descriptor(let descriptor): posix_spawn_file_actions_adddup2(&actions, descriptor, target)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            case .stdout: posix_spawn_file_actions_adddup2(&actions, 1, target)
            }
        }
        // Whatever else is open here (other tests' pipes and sockets) stays out of the child.
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaulted = sigset_t()
        sigemptyset(&defaulted)
        for signal in [SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGALRM, SIGUSR1, SIGUSR2, SIGCHLD] {
            sigaddset(&defaulted, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaulted)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if newProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer {
            argv.forEach { free($0) }
            envp?.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result =
            if var envp {
                posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, &envp)
            } else {
                posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
            }
        guard result == 0 else {
            throw TestServerFailure("cannot start \(arguments[0]): \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// How a tool run to completion ended, and what it wrote to stdout.
    public struct Finished: Sendable {
        /// The exit status, or 128 + the number of the signal that ended the tool.
        public var status: Int32
        public var output: Data
        public var text: String { String(decoding: output, as: UTF8.self) }
    }

    /// Runs `arguments` to completion on a thread of its own, so the wait never holds one of the
    /// cooperative pool's few threads; throws only when the tool cannot start.
    public static func run(_ arguments: [String], stderr: Output = .file("/dev/null")) async throws -> Finished {
        try await onOwnThread { try runBlocking(arguments, stderr: stderr) }
    }

    /// `run`, blocking the calling thread; for `deinit` and `defer`, which cannot await.
    public static func runBlocking(_ arguments: [String], stderr: Output = .file("/dev/null")) throws -> Finished {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw TestServerFailure("cannot create a pipe: errno \(errno)") }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        // Only the child's dup2'ed copy of the write end may keep the pipe open.
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        defer { close(readEnd) }
        let pid: pid_t
        do {
            pid = try spawn(arguments, stdout: .descriptor(writeEnd), stderr: stderr)
        } catch {
            close(writeEnd)
            throw error
        }
        close(writeEnd)
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(readEnd, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            output.append(contentsOf: buffer[0..<count])
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let signal = status & 0x7f
        return Finished(status: signal == 0 ? (status >> 8) & 0xff : 128 + signal, output: output)
    }
}
