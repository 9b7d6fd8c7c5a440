import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real WebDAV server on 127.0.0.1 for tests: Apache httpd with mod_dav (Debian's apache2-bin),
/// `rclone serve webdav`, or nextcloud-webdav.py (beside this file: a server that behaves like
/// Nextcloud's, with `oc:fileid` and `sync-collection`), serving a folder under `/dav/`, started on
/// a free port and stopped by its pid.
///
/// Apache runs from a configuration of its own in a temporary folder, as `www-data` (it refuses to
/// serve as root), so the served folder must be readable — and writable, for tests that write —
/// by that user. Its access log records every request with start time and duration, so tests can
/// count bytes sent and requests in flight. rclone reads no configuration, caches no listing (so
/// changes made in the folder show at once) and serves names as they are on disk (by default it
/// would show a tab as `␉`). nextcloud-webdav.py writes an access log like Apache's.
public final class WebDAVTestServer: @unchecked Sendable {
    public enum Kind: String, CaseIterable, Sendable, CustomStringConvertible {
        case apache, rclone, nextcloud
        public var description: String { rawValue }
    }

    /// The fake servers' scripts, run with python3 from where they lie.
    public static let fakeScript = scriptsFolder + "/fake-webdav.py"
    static let nextcloudScript = scriptsFolder + "/nextcloud-webdav.py"
    private static let scriptsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path

    public enum AuthScheme: String, Sendable {
        case basic = "Basic"
        case digest = "Digest"
    }

    /// A user the server accepts. rclone knows only Basic.
    public struct Credentials: Sendable {
        public var user: String
        public var password: String
        public var scheme: AuthScheme

        public init(user: String, password: String, scheme: AuthScheme) {
            self.user = user
            self.password = password
            self.scheme = scheme
        }
    }

    public let kind: Kind
    public let root: URL
    public let port: Int
    /// The server's main process, which leads a process group with its workers.
    public let pid: Int32
    /// How the server speaks TLS, if it does.
    public let tls: TLS?
    /// The temporary folder with the configuration and logs.
    private let directory: URL
    private let lock = NSLock()
    private var stopped = false

    /// `http://127.0.0.1:PORT/dav/` (`https://` with TLS).
    public var url: URL { URL(string: "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)/dav/")! }
    /// The same collection as an fpfs remote: `webdav://127.0.0.1:PORT/dav/` (`webdavs://` with TLS).
    public var remote: String { "\(tls == nil ? "webdav" : "webdavs")://127.0.0.1:\(port)/dav/" }

    /// HTTPS with a self-signed certificate for 127.0.0.1, made for this server.
    public enum TLS: Sendable {
        /// The certificate is added to the system's trust store (/etc/ssl/certs, by its subject
        /// hash) while the server runs, so clients that trust the system store trust it.
        case trustedBySystem
        /// Nobody trusts the certificate.
        case untrusted
    }

    private init(kind: Kind, root: URL, port: Int, directory: URL, pid: Int32, tls: TLS?) {
        self.kind = kind
        self.root = root
        self.port = port
        self.directory = directory
        self.pid = pid
        self.tls = tls
    }

    deinit { stop() }

    /// Starts a server for `root` (an existing folder) and returns once it answers; throws with
    /// the end of its error log if it does not within 20 seconds. With `bytesPerSecond` (Apache
    /// only) every answer's body is sent no faster, so tests can keep requests in flight; with
    /// `tls` (Apache only) it speaks HTTPS. With `port` it listens there (a server started again
    /// where a mount expects it) and makes one attempt only. With `maximumRequestBody` (Apache
    /// only) larger request bodies are refused with 413.
    public static func start(
        _ kind: Kind, serving root: URL, credentials: Credentials? = nil, bytesPerSecond: Int? = nil, tls: TLS? = nil,
        port fixedPort: Int? = nil, maximumRequestBody: Int? = nil
    ) async throws -> WebDAVTestServer {
        var lastFailure = "no attempt"
        for _ in 0..<(fixedPort == nil ? 5 : 1) {
            let port = try fixedPort ?? freePort()
            let directory = try makeDirectory()
            let arguments: [String]
            switch kind {
            case .apache:
                if let tls { try await makeCertificate(in: directory, trusted: tls == .trustedBySystem) }
                try await apacheConfiguration(
                    root: root, port: port, directory: directory, credentials: credentials,
                    bytesPerSecond: bytesPerSecond, tls: tls != nil, maximumRequestBody: maximumRequestBody
                ).write(to: directory.appending(path: "httpd.conf"), atomically: true, encoding: .utf8)
                arguments = ["/usr/sbin/apache2", "-f", directory.appending(path: "httpd.conf").path, "-DFOREGROUND"]
            case .rclone:
                precondition(
                    bytesPerSecond == nil && credentials?.scheme != .digest && tls == nil,
                    "rclone: Basic auth only, no rate, no TLS")
                var rclone = [
                    "/usr/bin/rclone", "serve", "webdav", root.path, "--addr", "127.0.0.1:\(port)", "--baseurl", "/dav",
                    "--config", "/dev/null", "--dir-cache-time", "0s", "--local-encoding", "None",
                    "--log-file", directory.appending(path: "error.log").path,
                ]
                if let credentials { rclone += ["--user", credentials.user, "--pass", credentials.password] }
                arguments = rclone
            case .nextcloud:
                precondition(bytesPerSecond == nil && credentials == nil && tls == nil, "nextcloud: no auth, rate, TLS")
                arguments = [
                    "python3", nextcloudScript, root.path, "--port", String(port), "--access-log",
                    directory.appending(path: "access.log").path,
                ]
            }
            let pid = try ChildProcess.spawn(
                arguments, stdout: .file("/dev/null"), stderr: .file(directory.appending(path: "stderr.log").path),
                newProcessGroup: true)
            registerGroup(pid)
            let server = WebDAVTestServer(
                kind: kind, root: root, port: port, directory: directory, pid: pid, tls: tls)
            if await server.waitUntilAnswering(timeout: .seconds(20)) { return server }
            lastFailure = server.errorLogTail()
            server.stop()
            if !lastFailure.contains("in use") { break }
        }
        throw TestServerFailure("\(kind) did not start: \(lastFailure)")
    }

    /// Stops the server and its workers (SIGTERM to the process group, SIGKILL after 5 s), reaps
    /// it and removes its folder; later calls do nothing.
    public func stop() {
        lock.lock()
        let first = !stopped
        stopped = true
        lock.unlock()
        guard first else { return }
        kill(-pid, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline {
                kill(-pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                break
            }
            usleep(20_000)
        }
        // Workers that outlived their parent are still in the group.
        kill(-pid, SIGKILL)
        if let trusted = try? String(contentsOf: directory.appending(path: "trusted-as"), encoding: .utf8) {
            try? FileManager.default.removeItem(atPath: trusted)
        }
        try? FileManager.default.removeItem(at: directory)
        Self.unregisterGroup(pid)
    }

    /// Where running servers leave their process group ids, so that scripts/test.sh can kill the
    /// servers of a test run that was itself killed: `$FPFS_TEST_TMPDIR/servers`.
    private static let registry: String? = ProcessInfo.processInfo.environment["FPFS_TEST_TMPDIR"].map {
        $0 + "/servers"
    }

    static func registerGroup(_ pgid: Int32) {
        guard let registry else { return }
        try? FileManager.default.createDirectory(atPath: registry, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: registry + "/\(pgid)", contents: nil)
    }

    static func unregisterGroup(_ pgid: Int32) {
        if let registry { try? FileManager.default.removeItem(atPath: registry + "/\(pgid)") }
    }

    /// True while the main process has not exited; it stays unreaped (a zombie, `Z` in
    /// /proc/PID/stat) until `stop`, so its pid cannot be reused meanwhile.
    private var isRunning: Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let afterName = stat.range(of: ") ")
        else { return false }
        return stat[afterName.upperBound...].first != "Z"
    }

    /// Lets the servers' own user (Apache runs as `www-data`) reach `folder` — every folder above it
    /// gets the search bit for all, as test runs keep their files in private (0700) temporary
    /// folders — and, when `contents` is true, read and write everything in it.
    public static func open(_ folder: URL, contents: Bool = true) throws {
        var ancestor = folder.standardizedFileURL
        while ancestor.path != "/" {
            ancestor.deleteLastPathComponent()
            var status = stat()
            guard stat(ancestor.path, &status) == 0 else { throw TestServerFailure("stat \(ancestor.path): \(errno)") }
            if status.st_mode & 0o001 == 0 { chmod(ancestor.path, (status.st_mode & 0o7777) | 0o111) }
        }
        guard contents else { return }
        let paths =
            [folder.path] + (FileManager.default.subpaths(atPath: folder.path) ?? []).map { folder.path + "/" + $0 }
        for path in paths {
            var status = stat()
            guard lstat(path, &status) == 0, status.st_mode & S_IFMT != S_IFLNK else { continue }
            let isFolder = status.st_mode & S_IFMT == S_IFDIR
            chmod(path, (status.st_mode & 0o7777) | (isFolder ? 0o777 : 0o666))
        }
    }

    /// Every request Apache (or nextcloud-webdav.py) logged so far.
    ///
    /// Apache writes a request's line just after it has answered, so a client may hold an answer
    /// whose line is not there yet. So this first asks for a marker path outside `/dav` and waits
    /// (up to 10 s) until the marker's line is in the log: every request answered before is then.
    public func accessLog() async throws -> [AccessLogEntry] {
        guard kind != .rclone, tls == nil else {
            throw TestServerFailure("only Apache over HTTP and nextcloud-webdav.py keep an access log")
        }
        let marker = "/fpfs-log-marker-\(UUID().uuidString)"
        Self.send("GET \(marker) HTTP/1.0\r\n\r\n", toPort: port)
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let text = try String(contentsOf: directory.appending(path: "access.log"), encoding: .utf8)
            let entries = text.split(separator: "\n").compactMap(AccessLogEntry.init(line:))
            if entries.contains(where: { $0.path == marker }) || ContinuousClock.now > deadline {
                return entries.filter { $0.path.hasPrefix("/dav") }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// nextcloud-webdav.py only: makes every sync token handed out so far invalid (403
    /// `valid-sync-token`), as a server that keeps a short history would.
    public func forgetSyncTokens() { control("forget-sync-tokens") }

    /// nextcloud-webdav.py only: sync tokens handed out from now on are longer than 500 bytes.
    public func useLongSyncTokens() { control("long-sync-tokens") }

    /// nextcloud-webdav.py only: REPORT gets 501 from now on, though collections still list it.
    public func refuseReports() { control("refuse-reports") }

    private func control(_ command: String) {
        precondition(kind == .nextcloud, "only nextcloud-webdav.py takes control requests")
        Self.send("POST /fpfs-control/\(command) HTTP/1.0\r\nContent-Length: 0\r\n\r\n", toPort: port)
    }

    /// The last lines the server wrote to its error log and stderr, for failure messages.
    public func errorLogTail() -> String {
        ["error.log", "stderr.log"].compactMap {
            try? String(contentsOf: directory.appending(path: $0), encoding: .utf8)
        }.joined(separator: "\n").split(separator: "\n").suffix(8).joined(separator: "\n")
    }

    /// Asks before it looks at the clock: a test process whose few threads were all busy for
    /// longer than `timeout` (dozens of suites start at once) still asks the server once.
    private func waitUntilAnswering(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if Self.accepts(port: port) { return true }
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// A key and a self-signed certificate for 127.0.0.1 in `directory`; when `trusted`, a copy in
    /// /etc/ssl/certs under its subject hash (its path noted in `trusted-as` for `stop`).
    private static func makeCertificate(in directory: URL, trusted: Bool) async throws {
        let (key, certificate) = (directory.appending(path: "key.pem").path, directory.appending(path: "cert.pem").path)
        _ = try await runTool(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
                "-subj", "/CN=fpfs test \(UUID().uuidString)", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ])
        guard trusted else { return }
        let hash = try await runTool("/usr/bin/openssl", ["x509", "-hash", "-noout", "-in", certificate])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var index = 0
        while FileManager.default.fileExists(atPath: "/etc/ssl/certs/\(hash).\(index)") { index += 1 }
        let installed = "/etc/ssl/certs/\(hash).\(index)"
        try FileManager.default.copyItem(atPath: certificate, toPath: installed)
        try installed.write(to: directory.appending(path: "trusted-as"), atomically: true, encoding: .utf8)
    }

    private static func apacheConfiguration(
        root: URL, port: Int, directory: URL, credentials: Credentials?, bytesPerSecond: Int?, tls: Bool,
        maximumRequestBody: Int?
    ) async throws -> String {
        let modules =
            [
                "mpm_event", "authz_core", "alias", "dav", "dav_fs", "auth_basic", "auth_digest", "authn_core",
                "authn_file", "authz_user", "ratelimit", "env",
            ] + (tls ? ["socache_shmcb", "ssl"] : [])
        let tlsSettings =
            tls
            ? """
            SSLEngine on
            SSLCertificateFile \(directory.path)/cert.pem
            SSLCertificateKeyFile \(directory.path)/key.pem
            """ : ""
        var auth = "Require all granted"
        if let credentials {
            let file = directory.appending(path: "users")
            let line: String
            switch credentials.scheme {
            case .basic:
                let hash = try await runTool("/usr/bin/htpasswd", ["-nbB", credentials.user, credentials.password])
                line = hash.trimmingCharacters(in: .whitespacesAndNewlines)
            case .digest:
                let digest = Insecure.MD5.hash(data: Data("\(credentials.user):fpfs-test:\(credentials.password)".utf8))
                line = "\(credentials.user):fpfs-test:\(digest.map { String(format: "%02x", $0) }.joined())"
            }
            try (line + "\n").write(to: file, atomically: true, encoding: .utf8)
            auth = """
                AuthType \(credentials.scheme.rawValue)
                  AuthName "fpfs-test"
                  \(credentials.scheme == .digest ? "AuthDigestProvider file" : "AuthBasicProvider file")
                  AuthUserFile \(file.path)
                  Require valid-user
                """
        }
        let rate = bytesPerSecond.map {
            "SetOutputFilter RATE_LIMIT\n  SetEnv rate-limit \(max(1, $0 / 1024))\n  SetEnv rate-initial-burst 0"
        }
        return """
            ServerRoot \(directory.path)
            PidFile \(directory.path)/httpd.pid
            Listen 127.0.0.1:\(port)
            ServerName 127.0.0.1
            \(modules.map { "LoadModule \($0)_module /usr/lib/apache2/modules/mod_\($0).so" }.joined(separator: "\n"))
            User www-data
            Group www-data
            ThreadsPerChild 64
            MaxRequestWorkers 128
            KeepAlive On
            MaxKeepAliveRequests 0
            ErrorLog \(directory.path)/error.log
            LogFormat "%{begin:usec}t\\t%D\\t%m\\t%>s\\t%B\\t%{Range}i\\t%U" timed
            CustomLog \(directory.path)/access.log timed
            DavLockDB \(directory.path)/lock/davlock
            \(tlsSettings)
            Alias /dav \(root.path)
            <Directory \(root.path)>
              Dav On
              Options None
              AllowOverride None
              \(auth)
              \(rate ?? "")
              \(maximumRequestBody.map { "LimitRequestBody \($0)" } ?? "")
            </Directory>
            """
    }

    /// A fresh folder for one server, traversable by Apache's user, with a lock folder it owns.
    private static func makeDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appending(path: "fpfs-dav-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: directory.appending(path: "lock"), withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        chmod(directory.appending(path: "lock").path, 0o777)
        return directory
    }

    /// A port nothing listens on now, from the kernel's choice for a socket bound to port 0.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestServerFailure("socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw TestServerFailure("bind: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// True when something accepts a TCP connection on 127.0.0.1:`port`.
    private static func accepts(port: Int) -> Bool {
        guard let fd = connection(toPort: port) else { return false }
        close(fd)
        return true
    }

    /// Sends `request` on a new connection and reads the answer to its end. Blocks briefly.
    private static func send(_ request: String, toPort port: Int) {
        guard let fd = connection(toPort: port) else { return }
        defer { close(fd) }
        _ = Array(request.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// A socket connected to 127.0.0.1:`port`, or nil.
    private static func connection(toPort port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        if connected { return fd }
        close(fd)
        return nil
    }

    /// Runs a small tool to completion and returns its output.
    private static func runTool(_ path: String, _ arguments: [String]) async throws -> String {
        let finished = try await ChildProcess.run([path] + arguments, stderr: .descriptor(2))
        guard finished.status == 0 else { throw TestServerFailure("\(path) exited \(finished.status)") }
        return finished.text
    }
}

/// Why a test server could not be started or asked.
public struct TestServerFailure: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
