import FileProviderKit
import Foundation
import LocalProvider
import S3Provider
import WebDAVProvider

/// The REMOTE argument of `fpfs mount`, parsed: which provider serves it, and how it is named in
/// /proc/mounts (`fpfs:NAME`) and in the default cache folder.
struct Remote: Sendable {
    enum Kind: Sendable {
        /// A folder on this machine, with the slow-remote options of its URL query.
        case folder(path: String, requestDelay: Duration, bandwidthLimit: UInt64?)
        /// A WebDAV collection at an `http(s)://` URL, and the user to log in as.
        case webdav(url: URL, user: String?)
        /// A bucket (and prefix) of an S3-compatible store, with how to reach it.
        case s3(bucket: String, prefix: String, options: S3Options)
    }

    /// The `--s3-*` options of `fpfs mount`.
    struct S3Options: Sendable {
        /// `--s3-endpoint`; nil: the profile's `endpoint_url`, else AWS for the region.
        var endpoint: String?
        /// `--s3-region`; nil: the environment or profile, else us-east-1.
        var region: String?
        /// `--s3-path-style`: always path style (a custom endpoint uses it anyway).
        var pathStyle = false
        /// `--s3-no-sign`: anonymous requests, for a public bucket.
        var noSign = false
        /// `--s3-multipart-threshold` and `--s3-part-size`; nil: the provider's defaults.
        var multipartThreshold: UInt64?
        var partSize: UInt64?
        /// `--upload-depth`: also the parts of one upload sent side by side.
        var partsInFlight = 4
    }

    let kind: Kind
    /// The remote as the user gave it, made absolute for folders.
    let name: String
    /// The secrets given in the environment (`SecretHandOff.take`), by variable, kept out of it.
    var secrets: [String: String] = [:]

    /// Parses a path, `file://` URL, `webdav://` or `webdavs://` URL, or `s3://` URL;
    /// throws a message naming the problem. `user` is `--user`, for remotes that log in.
    init(parsing argument: String, user: String? = nil, s3: S3Options = S3Options()) throws {
        guard !argument.isEmpty else { throw CommandFailure("the remote is empty") }
        if let schemeEnd = argument.range(of: "://") {
            let scheme = argument[..<schemeEnd.lowerBound].lowercased()
            switch scheme {
            case "file":
                guard let components = URLComponents(string: argument) else {
                    throw CommandFailure("'\(argument)' is not a valid file:// URL")
                }
                guard components.host == nil || components.host == "" || components.host == "localhost" else {
                    throw CommandFailure("file:// URLs name a folder on this machine, not on '\(components.host!)'")
                }
                var delay = Duration.zero
                var bandwidth: UInt64?
                for item in components.queryItems ?? [] {
                    let value = item.value ?? ""
                    switch item.name {
                    case "delay": delay = try Self.parseDuration(value)
                    case "bandwidth": bandwidth = try Self.parseByteCount(value, option: "bandwidth")
                    default:
                        throw CommandFailure(
                            "unknown option '\(item.name)' in the file:// URL (known: delay, bandwidth)")
                    }
                }
                let path = components.percentEncodedPath.removingPercentEncoding ?? components.path
                try self.init(folder: path, name: "file://" + path, delay: delay, bandwidth: bandwidth)
            case "webdav", "webdavs":
                try self.init(webdav: argument, secure: scheme == "webdavs", user: user)
                return
            case "s3":
                try self.init(s3: argument, options: s3)
            default:
                throw CommandFailure(
                    "unknown URL scheme '\(scheme)' (use a folder path, file://, webdav://, webdavs:// or s3://)")
            }
        } else {
            let absolute = CommandLinePath.absolute(argument)
            try self.init(folder: absolute, name: absolute, delay: .zero, bandwidth: nil)
        }
    }

    /// `webdav://HOST[:PORT]/PATH` (plain HTTP) or `webdavs://…` (HTTPS). A password in the URL is
    /// refused: it would show in the process list and in /proc/mounts.
    private init(webdav argument: String, secure: Bool, user: String?) throws {
        guard var components = URLComponents(string: argument), let host = components.host, !host.isEmpty else {
            throw CommandFailure("'\(argument)' is not a valid WebDAV URL (example: webdav://host:8080/path)")
        }
        guard components.password == nil else {
            throw CommandFailure("do not put the password in the URL: set FPFS_PASSWORD or use ~/.netrc")
        }
        guard components.query == nil, components.fragment == nil else {
            throw CommandFailure("a WebDAV URL takes no ?query or #fragment: '\(argument)'")
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw CommandFailure("the port in '\(argument)' must be from 1 to 65535, not \(port)")
        }
        let urlUser = components.user
        if let urlUser, let user, urlUser != user {
            throw CommandFailure("the URL names user '\(urlUser)' but --user says '\(user)'")
        }
        components.user = nil
        components.scheme = secure ? "https" : "http"
        if components.percentEncodedPath.isEmpty { components.percentEncodedPath = "/" }
        guard let url = components.url else { throw CommandFailure("'\(argument)' is not a valid WebDAV URL") }
        components.scheme = secure ? "webdavs" : "webdav"
        kind = .webdav(url: url, user: user ?? urlUser)
        name = components.string ?? argument
    }

    /// `s3://BUCKET[/PREFIX]`. Keys are not in the URL: they come from the environment or the
    /// AWS profile, never from the command line.
    private init(s3 argument: String, options: S3Options) throws {
        let rest = argument[argument.range(of: "://")!.upperBound...]
        let bucket = String(rest.prefix { $0 != "/" })
        let prefix = String(rest.dropFirst(bucket.count).drop { $0 == "/" })
        guard !bucket.isEmpty, !bucket.contains("@"), !bucket.contains(":"), !bucket.contains("?") else {
            throw CommandFailure(
                "'\(argument)' is not a valid S3 remote (example: s3://bucket/prefix; keys come from AWS_ACCESS_KEY_ID or ~/.aws)"
            )
        }
        kind = .s3(bucket: bucket, prefix: prefix, options: options)
        name = "s3://\(bucket)" + (prefix.isEmpty ? "" : "/\(prefix)")
    }

    private init(folder path: String, name: String, delay: Duration, bandwidth: UInt64?) throws {
        self.kind = .folder(path: path, requestDelay: delay, bandwidthLimit: bandwidth)
        self.name = name
    }

    /// What names the store behind the remote, for the default cache folder and the cache folder's
    /// check of its remote: the name, and for S3 the endpoint too, since two servers may each hold
    /// a bucket of one name (DECISIONS 255).
    var identity: String {
        guard case .s3(_, _, let options) = kind else { return name }
        return name + " at " + ((try? Self.s3Endpoint(options: options, found: Self.s3Found()).absoluteString) ?? "?")
    }

    /// Nil when the remote can be reached; otherwise why not. A folder that exists but is not a
    /// folder is not "unreachable" but wrong, and throws.
    func unreachableReason() throws -> String? {
        switch kind {
        case .folder(let path, _, _):
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                return "the remote folder '\(path)' does not exist"
            }
            guard isDirectory.boolValue else { throw CommandFailure("the remote '\(path)' is not a folder") }
            return nil
        case .webdav, .s3:
            // Asked by the daemon when it starts: a server that does not answer then means an
            // offline start (with a cache) or a clear error (without).
            return nil
        }
    }

    /// What to tell the user when the remote's root could not be had at mount: what failed, and
    /// what to try.
    func startFailure(_ error: any Error) -> String {
        switch (error as? ProviderError, kind) {
        case (.noSuchItem?, .webdav(let url, _)):
            return "the server has no collection \(url.path) — check the URL's path"
        case (.noSuchItem?, _):
            return "the remote \(name) does not exist — check its name"
        case (.serverUnreachable(let reason)?, _):
            return "cannot reach the remote \(name): \(reason)"
        default:
            return "cannot reach the remote \(name): \(error)"
        }
    }

    /// A provider for this remote, keeping its own state in `stateDirectory` and keeping up to
    /// `connections` requests in flight; for a folder that is missing, a `ReconnectingProvider`
    /// that makes it once the folder is there. With `links`, a WebDAV or S3 remote keeps symlinks
    /// as marker files (a folder holds them anyway).
    func makeProvider(stateDirectory: URL, connections: Int, links: Bool) throws -> any FileProvider {
        switch kind {
        case .folder(let path, let delay, let bandwidth):
            let connect: @Sendable () throws -> LocalProvider = {
                var options = LocalProvider.Options()
                options.requestDelay = delay
                options.bandwidthLimit = bandwidth
                options.stateDirectory = stateDirectory
                return try LocalProvider(root: URL(fileURLWithPath: path), options: options)
            }
            guard try unreachableReason() == nil else {
                return ReconnectingProvider(reachability: { try self.unreachableReason() }, connect: connect)
            }
            return try connect()
        case .webdav(let url, let user):
            let credentials = try PasswordSource.credentials(
                user: user, password: secrets[PasswordSource.variable], host: url.host ?? "",
                environment: ProcessInfo.processInfo.environment)
            return try WebDAVProvider(
                configuration: .init(
                    url: url, credentials: credentials, stateDirectory: stateDirectory, maximumConnections: connections,
                    symlinksAsMarkerFiles: links)
            )
        case .s3(let bucket, let prefix, let options):
            return try S3Provider(
                configuration: Self.s3Configuration(
                    bucket: bucket, prefix: prefix, options: options, secrets: secrets,
                    stateDirectory: stateDirectory, connections: connections, links: links),
                allowPlainHTTP: options.endpoint != nil)
        }
    }

    /// Where the bucket is and which keys sign for it, from the options, the environment and the
    /// AWS profile (see `S3Credentials.find`); `secrets` are the environment's taken out of it.
    /// With `links`, symlinks are kept as marker objects.
    static func s3Configuration(
        bucket: String, prefix: String, options: S3Options, secrets: [String: String], stateDirectory: URL,
        connections: Int, links: Bool
    ) throws -> S3Provider.Configuration {
        let found = s3Found(secrets: secrets)
        let region = options.region ?? found.region ?? "us-east-1"
        let endpoint = try s3Endpoint(options: options, found: found)
        guard options.noSign || found.credentials != nil else {
            throw CommandFailure(
                "no S3 keys: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with ~/.aws/credentials (or use --s3-no-sign for a public bucket)"
            )
        }
        let custom = options.endpoint != nil || found.endpoint != nil
        var configuration = S3Provider.Configuration(
            endpoint: endpoint, bucket: bucket, prefix: prefix, region: region,
            pathStyle: options.pathStyle || custom || bucket.contains("."),
            credentials: options.noSign ? nil : found.credentials, stateDirectory: stateDirectory,
            maximumConnections: connections)
        if let threshold = options.multipartThreshold { configuration.multipartThreshold = Int64(threshold) }
        if let size = options.partSize { configuration.partSize = Int64(size) }
        configuration.partsInFlight = options.partsInFlight
        configuration.symlinksAsMarkerFiles = links
        configuration.caBundle = found.caBundle
        return configuration
    }

    /// What the environment (with `secrets`, the variables taken out of it) and the AWS profile say.
    private static func s3Found(secrets: [String: String] = [:]) -> S3Credentials.Found {
        S3Credentials.find(
            environment: ProcessInfo.processInfo.environment.merging(secrets) { $1 },
            home: FileManager.default.homeDirectoryForCurrentUser.path)
    }

    /// The S3 server: `--s3-endpoint`, else the environment's or profile's, else AWS for the region.
    private static func s3Endpoint(options: S3Options, found: S3Credentials.Found) throws -> URL {
        let region = options.region ?? found.region ?? "us-east-1"
        let endpointText = options.endpoint ?? found.endpoint ?? "https://s3.\(region).amazonaws.com"
        guard let endpoint = URL(string: endpointText), endpoint.host != nil else {
            throw CommandFailure(
                "'\(endpointText)' is not a valid --s3-endpoint (example: https://s3.example.com:9000)")
        }
        return endpoint
    }

    /// The longest `delay` of a file:// URL: an hour per request is slow enough for any test.
    static let longestDelay = Duration.seconds(3600)

    /// "300ms", "2s", "1.5s", "1m", "2h" or a bare number of milliseconds, from 0 to `longest`;
    /// anything else (negative, 1e300s, inf, nan) throws a message naming the option and its
    /// range. `longest` is `longestDelay` for a file:// delay, a day for `--unmount-wait`.
    static func parseDuration(_ text: String, longest longestDuration: Duration = longestDelay) throws -> Duration {
        let range = "from 0 to \(longestDuration.components.seconds)s (examples: 300ms, 2s, 1m)"
        guard !text.hasPrefix("-") else { throw CommandFailure("delay must not be negative: '\(text)'") }
        let longest = Double(longestDuration.components.seconds)
        guard let seconds = Units.seconds(text, bare: 0.001), seconds >= 0, seconds <= longest else {
            throw CommandFailure("delay must be a duration \(range), not '\(text)'")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// "1048576", "64KiB", "50MiB", "10G" (powers of 1024), "10GB" (powers of 1000), any case: a
    /// positive count that fits in 63 bits (an off_t); anything else throws a message naming
    /// `option`.
    static func parseByteCount(_ text: String, option: String) throws -> UInt64 {
        guard !text.hasPrefix("-") else { throw CommandFailure("\(option) must be positive, not '\(text)'") }
        guard let bytes = Units.bytes(text), bytes > 0, bytes <= UInt64(Int64.max) else {
            throw CommandFailure(
                "'\(text)' is not a valid \(option): a count of bytes from 1 to 2^63-1 (examples: 1048576, 64KiB, 50MiB, 10GB)"
            )
        }
        return bytes
    }
}
