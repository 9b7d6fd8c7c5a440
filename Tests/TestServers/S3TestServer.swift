import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real S3 server for tests: Ceph's RADOS Gateway on a one-node cluster on 127.0.0.1, started by
/// scripts/lib/ceph-rgw.sh once per test process (it takes a few seconds) and shared by every test
/// that needs it; each test makes a bucket of its own.
///
/// The script runs in a process group of its own with the cluster's daemons, registered like the
/// WebDAV servers' so that scripts/test.sh kills a group a killed test run left behind; the group
/// is killed when the test process exits.
public final class S3TestServer: Sendable {
    /// The gateway, `http://127.0.0.1:PORT`.
    public let endpoint: URL
    /// The gateway over TLS, `https://127.0.0.1:PORT`, with a certificate of a test CA.
    public let httpsEndpoint: URL
    /// That test CA's certificate (PEM), trusted by nothing on the system.
    public let certificateAuthority: String
    /// The S3 user's keys, as scripts/lib/ceph-rgw.sh makes them (test-only values).
    public let accessKey = "fpfs-test-access-key"
    public let secretKey = "fpfs-test-secret-key-0123456789abcdef"
    /// The region the gateway accepts in signatures (RGW takes any; the default zonegroup's).
    public let region = "us-east-1"
    /// The script's process, which leads the group of the cluster's daemons.
    let pid: pid_t
    let directory: URL

    private init(endpoint: URL, httpsEndpoint: URL, certificateAuthority: String, pid: pid_t, directory: URL) {
        self.endpoint = endpoint
        self.httpsEndpoint = httpsEndpoint
        self.certificateAuthority = certificateAuthority
        self.pid = pid
        self.directory = directory
    }

    private static let script =
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "scripts/lib/ceph-rgw.sh").path

    private static let started = Mutex<Task<S3TestServer, any Error>?>(nil)

    /// The process's gateway, started at the first call; every later call gets the same one (or
    /// the same failure).
    public static func shared() async throws -> S3TestServer {
        let task = started.withLock { started in
            if let started { return started }
            let task = Task { try await start() }
            started = task
            return task
        }
        return try await task.value
    }

    /// The group to kill at exit; set once the script runs.
    private static let runningGroup = Mutex<pid_t>(0)

    private static func start() async throws -> S3TestServer {
        let base = ProcessInfo.processInfo.environment["FPFS_TEST_TMPDIR"] ?? NSTemporaryDirectory()
        let directory = URL(fileURLWithPath: base).appending(
            path: "ceph-rgw-\(getpid())-\(UUID().uuidString.prefix(8))")
        let state = directory.appending(path: "state")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let output = directory.appending(path: "script.log").path
        let pid = try ChildProcess.spawn(
            ["bash", script, state.path], stdout: .file(output), stderr: .file(output), newProcessGroup: true)
        WebDAVTestServer.registerGroup(pid)
        runningGroup.withLock { $0 = pid }
        atexit { S3TestServer.killGroup() }
        let endpointFile = state.appending(path: "endpoint")
        let deadline = ContinuousClock.now + .seconds(90)
        while true {
            // The https endpoint is written first.
            if let text = try? String(contentsOf: endpointFile, encoding: .utf8),
                let endpoint = URL(string: text.trimmingCharacters(in: .whitespacesAndNewlines)),
                let tlsText = try? String(contentsOf: state.appending(path: "https-endpoint"), encoding: .utf8),
                let httpsEndpoint = URL(string: tlsText.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                return S3TestServer(
                    endpoint: endpoint, httpsEndpoint: httpsEndpoint,
                    certificateAuthority: state.appending(path: "tls/ca.pem").path, pid: pid, directory: directory)
            }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid || ContinuousClock.now > deadline {
                let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                killGroup()
                throw TestServerFailure("the Ceph gateway did not start: \(log.suffix(2000))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Kills the cluster's process group; called at exit, and when the start failed.
    private static func killGroup() {
        let pid = runningGroup.withLock { pid in
            defer { pid = 0 }
            return pid
        }
        guard pid > 0 else { return }
        kill(-pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<100 where waitpid(pid, &status, WNOHANG) == 0 { usleep(20_000) }
        kill(-pid, SIGKILL)
        WebDAVTestServer.unregisterGroup(pid)
    }

    /// A bucket name of its own for one test: lowercase, unique in this run.
    public static func bucketName(_ label: String) -> String {
        let clean = label.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(30)
        return "\(clean)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// The answer of a signed request (curl's SigV4) for `path` (`/BUCKET/KEY`, percent-encoded
    /// here: everything but `A-Za-z0-9-_.~/`), with `body` as the content: status and body. `options`
    /// go to curl (`-I`: the body is the answer's headers).
    public func request(
        _ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:], options: [String] = []
    ) async throws -> (status: Int, body: Data) {
        let bodyFile = directory.appending(path: "body-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: bodyFile) }
        var arguments =
            [
                "curl", "-s", "-g", "--path-as-is", "-X", method, "--aws-sigv4", "aws:amz:\(region):s3", "--user",
                "\(accessKey):\(secretKey)", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-w", "\n%{http_code}",
            ] + options
        for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
        if let body {
            try body.write(to: bodyFile)
            arguments += ["--data-binary", "@\(bodyFile.path)"]
        }
        let unreserved = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~/")
        let (pathPart, query) = path.firstIndex(of: "?").map { (path[..<$0], path[$0...]) } ?? (path[...], "")
        arguments.append(
            endpoint.absoluteString + (pathPart.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "")
                + query)
        let finished = try await ChildProcess.run(arguments)
        guard finished.status == 0, let newline = finished.output.lastIndex(of: UInt8(ascii: "\n")),
            let status = Int(String(decoding: finished.output[(newline + 1)...], as: UTF8.self))
        else { throw TestServerFailure("curl \(method) \(path) failed: exit \(finished.status)") }
        return (status, finished.output[..<newline])
    }

    /// The headers a `HEAD` of `key` answers, names in lowercase; nil when the gateway has no such key.
    public func head(bucket: String, key: String) async throws -> [String: String]? {
        let (status, body) = try await request("HEAD", "/\(bucket)/\(key)", options: ["-I"])
        if status == 404 { return nil }
        guard status == 200 else { throw TestServerFailure("HEAD /\(bucket)/\(key): \(status)") }
        var headers: [String: String] = [:]
        for line in String(decoding: body, as: UTF8.self).split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return headers
    }

    /// Makes a bucket; throws unless the gateway answers 200.
    public func makeBucket(_ name: String) async throws {
        let (status, body) = try await request("PUT", "/\(name)")
        guard status == 200 else {
            throw TestServerFailure("PUT /\(name): \(status) \(String(decoding: body, as: UTF8.self))")
        }
    }

    /// Stores `content` as `key` of `bucket`.
    public func put(_ content: Data, bucket: String, key: String, headers: [String: String] = [:]) async throws {
        let (status, body) = try await request("PUT", "/\(bucket)/\(key)", body: content, headers: headers)
        guard status == 200 else {
            throw TestServerFailure("PUT /\(bucket)/\(key): \(status) \(String(decoding: body, as: UTF8.self))")
        }
    }

    /// Stores `content` under every one of `keys` (names of `A-Za-z0-9-_./` only), from one curl
    /// sending 32 at once: fast enough for a bucket of 100,000 keys.
    public func putMany(_ content: Data, bucket: String, keys: [String]) async throws {
        let source = directory.appending(path: "many-\(UUID().uuidString)")
        let config = directory.appending(path: "many-\(UUID().uuidString).curlrc")
        defer {
            try? FileManager.default.removeItem(at: source)
            try? FileManager.default.removeItem(at: config)
        }
        try content.write(to: source)
        let base = endpoint.absoluteString + "/" + bucket + "/"
        let lines = keys.map { "url = \"\(base)\($0)\"\nupload-file = \"\(source.path)\"\noutput = /dev/null\n" }
        try Data(lines.joined().utf8).write(to: config)
        let finished = try await ChildProcess.run([
            "curl", "-s", "-f", "--parallel", "--parallel-max", "32", "--aws-sigv4", "aws:amz:\(region):s3",
            "--user", "\(accessKey):\(secretKey)", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-K", config.path,
        ])
        guard finished.status == 0 else { throw TestServerFailure("curl of \(keys.count) PUTs: exit \(finished.status)") }
    }

    /// The content of `key`, or nil when the gateway has none (404).
    public func get(bucket: String, key: String) async throws -> Data? {
        let (status, body) = try await request("GET", "/\(bucket)/\(key)")
        if status == 404 { return nil }
        guard status == 200 else { throw TestServerFailure("GET /\(bucket)/\(key): \(status)") }
        return body
    }

    /// The keys of `bucket`, all of them (a flat ListObjectsV2 of at most 1000 keys).
    public func keys(bucket: String) async throws -> [String] {
        let (status, body) = try await request("GET", "/\(bucket)?list-type=2")
        guard status == 200 else { throw TestServerFailure("list /\(bucket): \(status)") }
        let text = String(decoding: body, as: UTF8.self)
        return text.components(separatedBy: "<Key>").dropFirst().compactMap {
            $0.components(separatedBy: "</Key>").first
        }
    }
}

/// s3-fault-proxy.py (beside this file) in front of the gateway, spoiling its answers in one way
/// (`mode`: short, range, xml, escape; see the script); stopped by its pid.
public final class S3FaultProxy: Sendable {
    public let endpoint: URL
    private let pid: pid_t
    private let log: String

    private init(endpoint: URL, pid: pid_t, log: String) {
        self.endpoint = endpoint
        self.pid = pid
        self.log = log
    }

    /// One answer the proxy sent.
    public struct Answer: Sendable {
        public var method: String
        public var path: String
        public var status: Int
        public var bytes: Int
    }

    /// Every answer sent so far, in order.
    public func answers() throws -> [Answer] {
        try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            guard words.count == 4, let status = Int(words[2]), let bytes = Int(words[3]) else { return nil }
            return Answer(method: String(words[0]), path: String(words[1]), status: status, bytes: bytes)
        }
    }

    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/s3-fault-proxy.py"

    /// Starts the proxy on a port it picks itself and reads back from its "ready PORT": a port
    /// picked here could be bound by another test's proxy first, and this one would then talk to
    /// that proxy, in its mode (a test of `short` once fetched through a `pass` proxy). Its files
    /// are its own for the same reason: an earlier proxy's "ready" must not speak for it.
    public static func start(inFrontOf server: S3TestServer, mode: String) async throws -> S3FaultProxy {
        let name = "proxy-\(UUID().uuidString.prefix(8))"
        let output = server.directory.appending(path: "\(name).out").path
        let log = server.directory.appending(path: "\(name).log").path
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        _ = FileManager.default.createFile(atPath: log + ".refusing", contents: nil)
        let pid = try ChildProcess.spawn(
            ["python3", script, "0", String(server.endpoint.port ?? 80), mode, log], stdout: .file(output),
            stderr: .file(output),
            environment: ProcessInfo.processInfo.environment.merging(["S3_PROXY_SECRET": server.secretKey]) { $1 },
            newProcessGroup: true)
        WebDAVTestServer.registerGroup(pid)
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            // Whole lines only: the last part may still be being written.
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            if let ready = lines.first(where: { $0.hasPrefix("ready ") }), let port = Int(ready.dropFirst(6)) {
                return S3FaultProxy(endpoint: URL(string: "http://127.0.0.1:\(port)")!, pid: pid, log: log)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        stop(pid)
        throw TestServerFailure("s3-fault-proxy.py did not start")
    }

    /// From now on a refusing mode (quota, full, toolarge…) lets every request through, as a
    /// server whose quota was freed or whose limit was raised.
    public func stopRefusing() throws {
        try FileManager.default.removeItem(atPath: log + ".refusing")
    }

    public func stop() { Self.stop(pid) }

    private static func stop(_ pid: pid_t) {
        kill(-pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        WebDAVTestServer.unregisterGroup(pid)
    }
}
