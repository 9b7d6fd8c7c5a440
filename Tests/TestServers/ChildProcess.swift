import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Starts the tools and servers of the tests with posix_spawn: stdin from /dev/null, stdout and
/// stderr where the caller says, default handling of the signals tests send, and optionally a
/// process group of its own, so a server and its workers can be stopped together.
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
}
