import Foundation
import Synchronization
import TestServers

#if canImport(Glibc)
    import Glibc
#endif

/// A WebDAV server for one test: Tests/TestServers/fake-webdav.py run with python3, serving a folder under
/// `/dav/` on 127.0.0.1 and misbehaving as its rules say.
///
/// The server reads its rules file before every request, so `setRules` takes effect at the next
/// request, even in the middle of a read. It is this process's child and is stopped by its pid
/// (SIGTERM, then SIGKILL) by `stop()`, or when the object goes away, so no test leaves one behind.
/// Its log, one line per request, goes to a file in the test's folder for failure messages.
final class FakeWebDAVServer: Sendable {
    /// One misbehaviour, for requests whose URL path ends with `path` (and that use `method`, if
    /// one is given); the script's docstring says what each fault does.
    struct Rule: Encodable, Sendable {
        enum Fault: String, Encodable, Sendable {
            case status500, shortBody, stall, wrongRange, badXML, hrefOutside, hrefDotDot, hrefSlash, slow
            case longName, hugeSize, deepNesting, trickle
        }

        var fault: Fault
        var path: String
        var method: String?
        /// KiB per second, for `slow`.
        var rate: Int?
        /// Applies to the first `times` matching requests only; nil for all of them.
        var times: Int?
        /// Seconds between bytes, for `trickle`.
        var interval: Double?
        /// Elements nested, for `deepNesting`.
        var depth: Int?

        init(
            _ fault: Fault, path: String, method: String? = nil, rate: Int? = nil, times: Int? = nil,
            interval: Double? = nil, depth: Int? = nil
        ) {
            self.fault = fault
            self.path = path
            self.method = method
            self.rate = rate
            self.times = times
            self.interval = interval
            self.depth = depth
        }
    }

    static let script = WebDAVTestServer.fakeScript

    /// The folder served under `/dav/`.
    let root: String
    private let rulesFile: String
    private let portFile: String
    private let logFile: String

    /// The running server's pid (nil once stopped) and the port it listens on.
    private struct State {
        var pid: pid_t?
        var port = 0
    }
    private let state = Mutex(State())

    private init(root: String, directory: String) {
        self.root = root
        rulesFile = directory + "/rules.json"
        portFile = directory + "/port"
        logFile = directory + "/server.log"
    }

    /// Starts a well-behaved server for `root` on a free port; its files go to `webdav/` in the
    /// scratch folder.
    static func start(serving root: String, in scratch: Scratch) async throws -> FakeWebDAVServer {
        let directory = scratch.path + "/webdav"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let server = FakeWebDAVServer(root: root, directory: directory)
        try server.setRules([])
        try await server.launch(port: 0)
        return server
    }

    deinit { stopBlocking() }

    var port: Int { state.withLock { $0.port } }

    /// The mount argument for the served folder.
    var url: String { "webdav://127.0.0.1:\(port)/dav" }

    /// What the server logged, for failure messages.
    var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    /// Replaces the rules; an empty list makes the server behave.
    func setRules(_ rules: [Rule]) throws {
        try JSONEncoder().encode(rules).write(to: URL(fileURLWithPath: rulesFile), options: .atomic)
    }

    /// Stops the server and starts it again on the same port, so a mount keeps its URL.
    func restart() async throws {
        await stop()
        try await launch(port: port)
    }

    /// Stops the server, waiting on a thread of its own so no Swift concurrency thread blocks.
    func stop() async {
        await withCheckedContinuation { continuation in
            Thread {
                self.stopBlocking()
                continuation.resume()
            }.start()
        }
    }

    /// Stops the server and reaps it; does nothing once stopped. Blocking, for `defer` blocks.
    func stopBlocking() {
        let running = state.withLock { state in
            let pid = state.pid
            state.pid = nil
            return pid
        }
        guard let pid = running else { return }
        kill(pid, SIGTERM)
        if !Self.reap(pid, within: .seconds(5)) {
            kill(pid, SIGKILL)
            _ = Self.reap(pid, within: .seconds(60))
        }
    }

    /// Runs the script and waits until it has written the port it listens on.
    private func launch(port: Int) async throws {
        try? FileManager.default.removeItem(atPath: portFile)
        let pid = try ChildProcess.spawn(
            ["python3", Self.script, root, "--rules", rulesFile, "--port", String(port), "--port-file", portFile],
            stdout: .file(logFile), stderr: .stdout)
        state.withLock { $0.pid = pid }
        let deadline = ContinuousClock.now + .seconds(30)
        // The file is looked for before the clock, as in WebDAVTestServer.waitUntilAnswering.
        while true {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
                let chosen = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                state.withLock { $0.port = chosen }
                return
            }
            if Self.reap(pid, within: .zero) {
                state.withLock { $0.pid = nil }
                throw MountTestFailure("fake-webdav.py exited before it listened: \(log)")
            }
            if ContinuousClock.now >= deadline {
                await stop()
                throw MountTestFailure("fake-webdav.py reported no port within 30 s: \(log)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Reaps the child if it ends within `timeout`; true once it is gone.
    private static func reap(_ pid: pid_t, within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let result = waitpid(pid, nil, WNOHANG)
            if result == pid || (result < 0 && errno != EINTR) { return true }
            if ContinuousClock.now >= deadline { return false }
            usleep(20_000)
        }
    }
}
