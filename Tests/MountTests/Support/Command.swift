import Foundation
import TestServers

#if canImport(Glibc)
    import Glibc
#endif

/// Runs an ordinary tool as a child process and captures what it printed and how it ended.
///
/// Mount tests drive the real filesystem through real tools, and a broken filesystem makes tools
/// hang; so every run has a deadline after which the child's whole process group is killed and the
/// test fails instead of hanging. Output goes to unlinked temporary files rather than pipes, so a
/// daemon that inherits the descriptors cannot keep the test waiting for end-of-file. Tools run
/// with `LC_ALL=C`, so messages ("Host is down") and sort orders are the same on every machine.
struct Command: Sendable, CustomStringConvertible {
    /// How a finished (or killed) tool ended and what it printed.
    struct Output: Sendable, CustomStringConvertible {
        var command: String
        /// The exit status, or 128 + the signal number when a signal ended the tool.
        var status: Int32
        /// The signal that ended the tool, if one did.
        var signal: Int32?
        /// The deadline passed and the tool was killed.
        var timedOut: Bool
        var duration: Duration
        var stdoutData: Data
        var stderrData: Data

        var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
        var stderr: String { String(decoding: stderrData, as: UTF8.self) }
        var succeeded: Bool { status == 0 && !timedOut }

        /// Non-empty lines of stdout.
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }

        var description: String {
            var text = "`\(command)` "
            if timedOut {
                text += "timed out after \(duration) and was killed"
            } else if let signal {
                text += "was killed by signal \(signal)"
            } else {
                text += "exited \(status)"
            }
            let err = stderr.trimmingCharacters(in: .whitespacesAndNewlines)
            if !err.isEmpty { text += "; stderr: \(err.prefix(2000))" }
            return text
        }
    }

    var arguments: [String]
    var directory: String?
    var timeout: Duration
    /// Variables added to the test's own environment, for what must not be on a command line
    /// (a password) or what a tool reads from there.
    var environment: [String: String] = [:]

    init(_ arguments: [String], in directory: String? = nil, timeout: Duration = .seconds(60)) {
        precondition(!arguments.isEmpty, "a command needs a program")
        self.arguments = arguments
        self.directory = directory
        self.timeout = timeout
    }

    /// A bash script (with pipefail), for pipelines; `arguments` become `$1`, `$2`, ….
    static func bash(
        _ script: String, _ arguments: String..., in directory: String? = nil, timeout: Duration = .seconds(60)
    ) -> Command {
        Command(["bash", "-o", "pipefail", "-c", script, "bash"] + arguments, in: directory, timeout: timeout)
    }

    var description: String {
        arguments.map { $0.contains(" ") || $0.isEmpty ? "'\($0)'" : $0 }.joined(separator: " ")
    }

    /// Runs the tool on a thread of its own, so waiting never holds a Swift concurrency thread.
    func run() async -> Output {
        await withCheckedContinuation { continuation in
            let command = self
            Thread { continuation.resume(returning: command.runBlocking()) }.start()
        }
    }

    /// Runs the tool and throws unless it exited 0 before its deadline.
    @discardableResult
    func check() async throws -> Output {
        let output = await run()
        guard output.succeeded else { throw MountTestFailure("\(output)") }
        return output
    }

    /// Runs the tool, blocking the calling thread; for `defer` blocks, which cannot await.
    func runBlocking() -> Output {
        let start = ContinuousClock.now
        let stdoutFile = Self.unlinkedTemporaryFile()
        let stderrFile = Self.unlinkedTemporaryFile()
        defer {
            close(stdoutFile)
            close(stderrFile)
        }
        var output = Output(
            command: description, status: 127, signal: nil, timedOut: false, duration: .zero, stdoutData: Data(),
            stderrData: Data())

        guard let pid = spawn(stdout: stdoutFile, stderr: stderrFile, output: &output) else { return output }

        let watchdog = Watchdog(pid: pid)
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { watchdog.killIfRunning() }

        // Wait without reaping first: until the watchdog is disarmed the pid (and its process group)
        // must not be recycled, or the watchdog could kill a stranger.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0, errno == EINTR {}
        let timedOut = watchdog.disarm()
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}

        output.duration = ContinuousClock.now - start
        output.timedOut = timedOut
        if status & 0x7f == 0 {
            output.status = (status >> 8) & 0xff
        } else {
            output.signal = status & 0x7f
            output.status = 128 + (status & 0x7f)
        }
        output.stdoutData = Self.contents(of: stdoutFile)
        output.stderrData = Self.contents(of: stderrFile)
        return output
    }

    /// Starts the child in a process group of its own (so the watchdog can kill all it started),
    /// stdin from /dev/null, in `directory` when one is given. Returns nil (and fills `output`)
    /// when it cannot start.
    private func spawn(stdout: Int32, stderr: Int32, output: inout Output) -> pid_t? {
        var environment = ProcessInfo.processInfo.environment.merging(self.environment) { $1 }
        environment["LC_ALL"] = "C"
        environment["TZ"] = "UTC"
        // posix_spawn_file_actions_addchdir_np needs _GNU_SOURCE, which Swift's Glibc module lacks.
        var arguments = arguments
        if let directory { arguments = ["/bin/sh", "-c", "cd -- \"$0\" && exec \"$@\"", directory] + arguments }
        do {
            return try ChildProcess.spawn(
                arguments, stdout: .descriptor(stdout), stderr: .descriptor(stderr), environment: environment,
                newProcessGroup: true)
        } catch {
            output.stderrData = Data("\(error)".utf8)
            return nil
        }
    }

    /// A temporary file already unlinked, so nothing is left behind whatever happens.
    private static func unlinkedTemporaryFile() -> Int32 {
        var template = Array("\(TestRoot.path)/output.XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        precondition(fd >= 0, "cannot create a temporary file under \(TestRoot.path): \(errno)")
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return fd
    }

    /// What the child wrote, read from the start of the file (at most 256 MiB).
    private static func contents(of fd: Int32) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var offset: off_t = 0
        while data.count < 256 << 20 {
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
            offset += off_t(count)
        }
        return data
    }
}

/// Kills a child's process group when its deadline passes, unless the child has already ended.
private final class Watchdog: @unchecked Sendable {
    private let pid: pid_t
    /// Guards `finished` and `fired`.
    private let lock = NSLock()
    private var finished = false
    private var fired = false

    init(pid: pid_t) { self.pid = pid }

    func killIfRunning() {
        lock.lock()
        defer { lock.unlock() }
        guard !finished else { return }
        fired = true
        kill(-pid, SIGKILL)
    }

    /// Marks the child finished; returns whether the watchdog had already fired.
    func disarm() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        finished = true
        return fired
    }
}
