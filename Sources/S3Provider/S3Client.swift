import AsyncHTTPClient
import Crypto
import FileProviderKit
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The HTTP side of the provider: URLs of keys (path or virtual-hosted style), SigV4 signatures,
/// retries of failures on the way, and S3's error answers turned into `ProviderError`s.
final class S3Client: Sendable {
    /// One request: `key` nil addresses the bucket itself.
    struct Request: Sendable {
        var method: HTTPMethod
        var key: String?
        var query: [(String, String)] = []
        var headers: [(String, String)] = []
        var body: Body = .none
        /// True when sending the request twice does no harm, so failures on the way are retried.
        var isIdempotent = true
    }

    /// What a request sends.
    enum Body: Sendable {
        case none
        case bytes([UInt8])
        /// `length` bytes of a file from `start`, streamed (signed as `UNSIGNED-PAYLOAD`).
        case file(URL, start: Int64 = 0, length: Int64)
    }

    /// An answer read whole (small answers: errors, listings, heads).
    struct Answer: Sendable {
        var status: HTTPResponseStatus
        var headers: HTTPHeaders
        var body: [UInt8]
    }

    let configuration: S3Provider.Configuration
    private let http: HTTPClient
    private let signer: SigV4Signer?
    private let isShutDown = Mutex(false)
    /// `scheme://host[:port]` of requests, with the bucket in the host for virtual-hosted style.
    private let origin: String
    /// The `Host` header, as signed.
    private let host: String
    /// `/BUCKET` in path style, else "".
    private let bucketPath: String

    /// One event loop for every connection, as WebDAVClient has (DECISIONS 161).
    private static let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// Checks the endpoint and opens the connection pool; `cannotSynchronize` for an endpoint that
    /// is not `http(s)://host[:port]`, or plain `http` to a host that is not this machine's.
    init(configuration: S3Provider.Configuration, allowPlainHTTP: Bool) throws {
        guard let components = URLComponents(url: configuration.endpoint, resolvingAgainstBaseURL: false),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let hostName = components.host?.lowercased(), !hostName.isEmpty
        else {
            throw ProviderError.cannotSynchronize(
                reason: "'\(configuration.endpoint)' is not an http:// or https:// endpoint")
        }
        let loopback = ["127.0.0.1", "localhost", "::1"].contains(hostName)
        if scheme == "http", !loopback, !allowPlainHTTP {
            throw ProviderError.cannotSynchronize(reason: "plain http is allowed only to this machine")
        }
        let defaultPort = scheme == "https" ? 443 : 80
        let port = components.port.flatMap { $0 == defaultPort ? nil : $0 }
        let bracketed = hostName.contains(":") ? "[\(hostName)]" : hostName
        let fullHost = configuration.pathStyle ? bracketed : "\(configuration.bucket).\(bracketed)"
        host = fullHost + (port.map { ":\($0)" } ?? "")
        origin = "\(scheme)://\(host)"
        bucketPath = configuration.pathStyle ? "/" + SigV4Signer.encoded(configuration.bucket) : ""
        self.configuration = configuration
        signer = configuration.credentials.map { SigV4Signer(credentials: $0, region: configuration.region) }
        var pool = HTTPClient.Configuration.ConnectionPool(
            idleTimeout: .seconds(60),
            concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, configuration.maximumConnections))
        pool.retryConnectionEstablishment = false
        var settings = HTTPClient.Configuration(
            tlsConfiguration: scheme == "https" ? .makeClientConfiguration() : nil,
            redirectConfiguration: .disallow,
            timeout: .init(
                connect: .nanoseconds(Int64(configuration.connectTimeout.components.seconds) * 1_000_000_000),
                read: .nanoseconds(Int64(configuration.readTimeout.components.seconds) * 1_000_000_000)),
            connectionPool: pool)
        settings.httpVersion = .http1Only
        if scheme == "https", let bundle = configuration.caBundle {
            guard FileManager.default.isReadableFile(atPath: bundle) else {
                throw ProviderError.cannotSynchronize(
                    reason: "cannot read the CA bundle \(bundle) (AWS_CA_BUNDLE or the profile's ca_bundle)")
            }
            settings.tlsConfiguration?.trustRoots = .file(bundle)
        }
        http = HTTPClient(eventLoopGroup: Self.eventLoops, configuration: settings)
    }

    func shutdown() async {
        let first = isShutDown.withLock { wasShutDown in
            defer { wasShutDown = true }
            return !wasShutDown
        }
        if first { try? await http.shutdown() }
    }

    /// A provider dropped without `invalidate` must not take the process down (AsyncHTTPClient
    /// traps on a client still open when it goes).
    deinit {
        if !isShutDown.withLock({ $0 }) { try? http.syncShutdown() }
    }

    /// The URI path of a key (or of the bucket), percent-encoded as sent and signed.
    func path(ofKey key: String?) -> String {
        guard let key else { return bucketPath.isEmpty ? "/" : bucketPath + "/" }
        return bucketPath + "/" + SigV4Signer.encoded(key, keepingSlashes: true)
    }

    /// Sends a request, signed, and returns the answer's head with its body to read; retries
    /// idempotent requests that got no answer or a 500/502/503/504 with growing, jittered pauses.
    /// A connection that cannot be made is `serverUnreachable`.
    func send(_ request: Request) async throws -> HTTPClientResponse {
        var attempt = 0
        while true {
            try Task.checkCancellation()
            let path = path(ofKey: request.key)
            let query = SigV4Signer.canonicalQuery(request.query)
            var outgoing = HTTPClientRequest(url: origin + path + (query.isEmpty ? "" : "?" + query))
            outgoing.method = request.method
            var headers = request.headers + [("host", host)]
            let payloadHash: String
            switch request.body {
            case .none:
                payloadHash = SigV4Signer.emptyPayloadHash
            case .bytes(let bytes):
                payloadHash = SigV4Signer.hex(SHA256Digest.of(bytes))
                outgoing.body = .bytes(ByteBuffer(bytes: bytes))
            case .file(let url, let start, let length):
                payloadHash = SigV4Signer.unsignedPayload
                outgoing.body = .stream(
                    FileBodyChunks(url: url, start: start, length: length), length: .known(length))
            }
            if let signer {
                headers += signer.signingHeaders(
                    method: request.method.rawValue, path: path, query: request.query, headers: headers,
                    payloadHash: payloadHash, date: Date())
            }
            for (name, value) in headers { outgoing.headers.add(name: name, value: value) }
            do {
                let response = try await http.execute(outgoing, deadline: .now() + .hours(24))
                guard [500, 502, 503, 504].contains(response.status.code), request.isIdempotent,
                    attempt < configuration.retries
                else { return response }
                _ = try? await response.body.collect(upTo: 1 << 20)
            } catch {
                if Task.isCancelled { throw CancellationError() }
                // Sending again cannot make a certificate trusted.
                if let reason = Self.untrustedCertificate(error) {
                    throw ProviderError.serverUnreachable(reason: reason)
                }
                guard request.isIdempotent, attempt < configuration.retries else {
                    throw ProviderError.serverUnreachable(
                        reason: RefusedConnection.reason(for: error, authority: host) ?? "\(origin): \(error)")
                }
            }
            attempt += 1
            // 200 ms, 800 ms, 3.2 s…, each between half and all of it: clients that failed together
            // do not come back together.
            let pause = 200 * (1 << (2 * (attempt - 1)))
            try await Task.sleep(for: .milliseconds(Int.random(in: (pause / 2)...pause)))
        }
    }

    /// What to tell the user when `error` is a TLS handshake that refused the server's certificate
    /// (BoringSSL's `CERTIFICATE_VERIFY_FAILED`, however the client wraps it); nil otherwise.
    static func untrustedCertificate(_ error: any Error) -> String? {
        guard "\(error)".contains("CERTIFICATE_VERIFY_FAILED") else { return nil }
        return "the server's certificate is not trusted (CERTIFICATE_VERIFY_FAILED): "
            + "give the CA that signed it in AWS_CA_BUNDLE or the profile's ca_bundle"
    }

    /// Sends a request and reads its answer whole (up to `limit` bytes).
    func sendCollecting(_ request: Request, limit: Int = 16 << 20) async throws -> Answer {
        let response = try await send(request)
        do {
            let body = try await response.body.collect(upTo: limit)
            return Answer(status: response.status, headers: response.headers, body: Array(body.readableBytesView))
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw ProviderError.serverUnreachable(
                reason: "reading the answer to \(request.method.rawValue) \(request.key ?? "/") failed: \(error)")
        }
    }

    /// The error for an answer that is not the success the caller wanted, from its status and the
    /// `<Code>` of its error document. `what` names the request; the message never holds a key.
    func error(for answer: Answer, doing what: String, identifier: ItemIdentifier?) -> ProviderError {
        let document = try? S3XMLElement.parse(answer.body)
        let code = document?.text(of: "Code") ?? ""
        let said = "\(what) answered \(answer.status.code)\(code.isEmpty ? "" : " \(code)")"
        switch (answer.status.code, code) {
        case (_, "SignatureDoesNotMatch"), (_, "InvalidAccessKeyId"):
            return .notAuthenticated(reason: "access denied by the server: check the access key (\(said))")
        case (_, "RequestTimeTooSkewed"):
            return .notAuthenticated(
                reason: "RequestTimeTooSkewed: this machine's clock is too far from the server's (\(said))")
        case (_, "AuthorizationHeaderMalformed"), (_, "PermanentRedirect"), (301, _),
            (400, "") where answer.headers.first(name: "x-amz-bucket-region") != nil:
            // A HEAD's answer has no body: its header names the region.
            let region = document?.text(of: "Region") ?? answer.headers.first(name: "x-amz-bucket-region")
            return .cannotSynchronize(
                reason: "the bucket is in another region\(region.map { ": use --s3-region \($0)" } ?? "") (\(said))")
        case (_, "NoSuchBucket"):
            return .cannotSynchronize(reason: "the bucket \(configuration.bucket) does not exist (\(said))")
        case (_, "EntityTooLarge"), (413, _):
            return .notAuthenticated(reason: "the server refuses an object this large (\(said))")
        case (_, "InsufficientQuota"), (_, "QuotaExceeded"), (507, _):
            return .insufficientQuota
        case (401, _), (403, _):
            return .notAuthenticated(reason: "access denied by the server: check the access key (\(said))")
        case (404, _):
            return .noSuchItem(identifier)
        case (412, _):
            return .versionNoLongerAvailable
        case (500...599, _):
            return .serverUnreachable(reason: said)
        default:
            return .cannotSynchronize(reason: said)
        }
    }
}

extension SHA256Digest {
    /// The SHA-256 of `bytes`.
    static func of(_ bytes: [UInt8]) -> SHA256Digest { SHA256.hash(data: bytes) }
}
