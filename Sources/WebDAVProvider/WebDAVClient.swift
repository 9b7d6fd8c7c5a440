import AsyncHTTPClient
import FileProviderKit
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The HTTP side of the provider: URLs of paths, authentication, retries of failures on the way,
/// and HTTP statuses turned into `ProviderError`s.
final class WebDAVClient: Sendable {
    /// One request to send, with a body of `bytes`, or one `body` makes afresh for each attempt
    /// (a file streamed up; such a request goes only through `send`).
    struct Request: Sendable {
        var method: HTTPMethod
        var path: RemotePath
        var isCollection = false
        var headers: [(String, String)] = []
        var bytes: ByteBuffer?
        var body: (@Sendable () throws -> HTTPClientRequest.Body)?
        /// True when sending the request twice does no harm, so failures on the way are retried.
        var isIdempotent = true
    }

    let configuration: WebDAVProvider.Configuration
    private let http: HTTPClient
    private let authenticator: Authenticator
    private let isShutDown = Mutex(false)
    /// `scheme://host:port`.
    private let origin: String
    /// The mounted collection's path as the server spells it, with a slash at each end.
    private let basePath: String
    /// The decoded components of `basePath`, to recognise hrefs below it however they are encoded.
    private let baseComponents: [[UInt8]]

    /// One event loop for every connection (DECISIONS 161). A request's task and its connection
    /// then share a thread: with a loop per core, AsyncHTTPClient ran a request's delegate on one
    /// loop and its connection on whichever had an idle connection, and every body part and every
    /// demand for more crossed between the two threads. Shared by the process's clients, never
    /// shut down, like NIO's own singleton.
    private static let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// Reads of 64 to 128 KiB from a connection, where NIO's default starts at 2 KiB, falls to
    /// 64 bytes after small answers, and stops at 64 KiB: a GET's body arrives in fewer, larger
    /// parts, each a system call, a parse and a piece for the cache sink (DECISIONS 161). Larger
    /// reads cost the daemon more memory than B9's bound leaves.
    private static let receiveBuffers = AdaptiveRecvByteBufferAllocator(
        minimum: 64 << 10, initial: 128 << 10, maximum: 128 << 10)

    /// Checks the URL and opens the connection pool; throws `cannotSynchronize` for a URL that is
    /// not `http(s)://host[:port]/path` with a port from 1 to 65535.
    init(configuration: WebDAVProvider.Configuration) throws {
        guard let components = URLComponents(url: configuration.url, resolvingAgainstBaseURL: false),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty
        else {
            throw ProviderError.cannotSynchronize(reason: "'\(configuration.url)' is not an http:// or https:// URL")
        }
        // The HTTP client traps on a port beyond 16 bits.
        if let port = components.port, !(1...65535).contains(port) {
            throw ProviderError.cannotSynchronize(reason: "the port of '\(configuration.url)' is not from 1 to 65535")
        }
        let hostPart = host.contains(":") ? "[\(host)]" : host
        origin = "\(scheme)://\(hostPart)" + (components.port.map { ":\($0)" } ?? "")
        var decoded: [[UInt8]] = []
        for part in components.percentEncodedPath.utf8.split(separator: UInt8(ascii: "/")) {
            guard let bytes = RemotePath.percentDecoded(part) else {
                throw ProviderError.cannotSynchronize(
                    reason: "the URL path '\(components.percentEncodedPath)' is malformed")
            }
            decoded.append(bytes)
        }
        baseComponents = decoded
        basePath = "/" + decoded.map { RemotePath.percentEncoded($0) + "/" }.joined()
        self.configuration = configuration
        authenticator = Authenticator(credentials: configuration.credentials)
        var pool = HTTPClient.Configuration.ConnectionPool(
            idleTimeout: .seconds(60),
            concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, configuration.maximumConnections))
        pool.retryConnectionEstablishment = false
        var settings = HTTPClient.Configuration(
            tlsConfiguration: scheme == "https" ? .makeClientConfiguration() : nil,
            redirectConfiguration: .disallow,
            timeout: .init(
                connect: .nanoseconds(Int64(configuration.connectTimeout.nanoseconds)),
                read: .nanoseconds(Int64(configuration.readTimeout.nanoseconds))),
            connectionPool: pool)
        settings.httpVersion = .http1Only
        settings.http1_1ConnectionDebugInitializer = { channel in
            channel.setOption(ChannelOptions.recvAllocator, value: Self.receiveBuffers)
        }
        http = HTTPClient(eventLoopGroup: Self.eventLoops, configuration: settings)
    }

    /// Closes the connections; the client is unusable afterwards.
    func shutdown() async {
        let first = isShutDown.withLock { wasShutDown in
            defer { wasShutDown = true }
            return !wasShutDown
        }
        guard first else { return }
        try? await http.shutdown()
    }

    /// The engine shuts the client down through `invalidate`; a provider dropped without that (a
    /// test that failed half-way) must not take the process down, as AsyncHTTPClient traps on a
    /// client that is still open when it goes. Blocks briefly.
    deinit {
        if !isShutDown.withLock({ $0 }) { try? http.syncShutdown() }
    }

    /// The server's path of an item: the base path, the canonical encoding, and a final slash for
    /// collections (servers redirect or refuse without it).
    func serverPath(of path: RemotePath, isCollection: Bool) -> String {
        if path.components.isEmpty { return basePath }
        return basePath + path.encoded + (isCollection ? "/" : "")
    }

    func url(of path: RemotePath, isCollection: Bool) -> String {
        origin + serverPath(of: path, isCollection: isCollection)
    }

    /// The path below the mount of an href from a multistatus answer (an absolute path or URL);
    /// nil for one outside the mounted collection, on another server, or with a component that
    /// cannot be a filename (`..`, an encoded `/`).
    func path(ofHref href: String) -> RemotePath? {
        // Read as UTF-8 where it can be: an href's characters (grapheme clusters) cost a walk of
        // their own, for each of a listing's thousands of items.
        let slash = UInt8(ascii: "/")
        var text = Substring(href)
        // Servers mostly send absolute paths; only a full URL needs its origin checked.
        if text.utf8.first != slash, let schemeEnd = text.range(of: "://") {
            let rest = text[schemeEnd.upperBound...]
            let authorityEnd = rest.utf8.firstIndex(of: slash) ?? rest.endIndex
            guard origin.lowercased().hasSuffix("://" + rest[..<authorityEnd].lowercased()) else { return nil }
            text = rest[authorityEnd...]
        }
        if let query = text.utf8.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            text = text[..<query]
        }
        guard text.utf8.first == slash else { return nil }
        var parts = text.utf8.dropFirst().split(separator: slash, omittingEmptySubsequences: false)
        if parts.last?.isEmpty == true { parts.removeLast() }
        var decoded: [[UInt8]] = []
        for part in parts {
            guard let bytes = RemotePath.percentDecoded(part) else { return nil }
            decoded.append(bytes)
        }
        guard decoded.starts(with: baseComponents) else { return nil }
        var components: [Filename] = []
        for bytes in decoded.dropFirst(baseComponents.count) {
            guard let name = RemotePath.component(bytes) else { return nil }
            components.append(name)
        }
        return RemotePath(components: components)
    }

    /// Sends a request: answers authentication challenges, retries idempotent requests that failed
    /// on the way (no answer, or 500/502/503/504) with growing pauses, and turns a connection that
    /// cannot be made into `serverUnreachable`. Other statuses come back for the caller to judge;
    /// the caller reads or drops the body.
    func send(_ request: Request) async throws -> HTTPClientResponse {
        try await send(request) { outgoing in try await self.http.execute(outgoing, deadline: .now() + .hours(24)) }
    }

    /// Sends a request whose body, if any, is `bytes`, as `send` does; the answer's body then goes
    /// from the event loop to where the caller says (`StreamedBody`), or at once to the sink of an
    /// `admission` that accepts the head.
    func sendStreaming(_ request: Request, admitting admission: StreamedBody.Admission? = nil) async throws
        -> StreamedResponse
    {
        precondition(request.body == nil, "a streamed request's body is bytes")
        return try await send(request) { outgoing in
            let sent = try HTTPClient.Request(
                url: outgoing.url, method: outgoing.method, headers: outgoing.headers,
                body: request.bytes.map { .byteBuffer($0) })
            return try await StreamedBody.send(sent, with: self.http, admitting: admission)
        }
    }

    /// `send`'s loop, with `attempt` sending one request and waiting for its answer's head.
    private func send<Answer: ReceivedResponse>(
        _ request: Request, attempt send: (HTTPClientRequest) async throws -> Answer
    ) async throws -> Answer {
        var attempt = 0
        var challenges = 0
        while true {
            try Task.checkCancellation()
            let serverPath = serverPath(of: request.path, isCollection: request.isCollection)
            var outgoing = HTTPClientRequest(url: origin + serverPath)
            outgoing.method = request.method
            for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
            let authorization = authenticator.authorization(method: request.method.rawValue, uri: serverPath)
            if let authorization { outgoing.headers.add(name: "Authorization", value: authorization) }
            outgoing.body = try request.body?() ?? request.bytes.map { .bytes($0) }
            do {
                let response = try await send(outgoing)
                switch response.status.code {
                case 401:
                    challenges += 1
                    if challenges <= 2,
                        authenticator.challenged(by: response.headers, hadAuthorization: authorization != nil)
                    {
                        await response.discardBody()
                        continue
                    }
                    return response
                case 500, 502, 503, 504:
                    guard request.isIdempotent, attempt < configuration.retries else { return response }
                    await response.discardBody()
                default:
                    return response
                }
            } catch {
                if Task.isCancelled { throw CancellationError() }
                guard request.isIdempotent, attempt < configuration.retries else {
                    throw ProviderError.serverUnreachable(reason: Self.describe(error, url: origin))
                }
            }
            attempt += 1
            try await Task.sleep(for: .milliseconds(250 * (1 << (2 * (attempt - 1)))))
        }
    }

    /// Sends a request and reads a small answer whole (error bodies, PROPFIND of one item, MKCOL).
    /// A request whose body is bytes goes through the delegate path, as GETs of contents do, so
    /// that a mount's first requests have made that path's first-use costs before its first read.
    func sendCollecting(_ request: Request, limit: Int = 16 << 20) async throws -> (any ReceivedResponse, ByteBuffer) {
        do {
            if request.body == nil {
                let response = try await sendStreaming(request)
                return (response, try await response.body.collect(upTo: limit))
            }
            let response = try await send(request)
            return (response, try await response.body.collect(upTo: limit))
        } catch let error as ProviderError {
            throw error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw ProviderError.serverUnreachable(
                reason: "reading the answer to \(request.method.rawValue) \(request.path) failed: \(error)")
        }
    }

    /// The error for a status that is not the success the caller wanted.
    static func error(for status: HTTPResponseStatus, path: RemotePath, method: HTTPMethod) -> ProviderError {
        let what = "\(method.rawValue) \(path) answered \(status.code) \(status.reasonPhrase)"
        switch status.code {
        case 401: return .notAuthenticated(reason: "the server refused the user name or password (\(what))")
        case 403: return .notAuthenticated(reason: "the server forbids it (\(what))")
        // A size limit answers the same to every retry: a refusal, not a passing failure, so a
        // large upload is not sent again and again at the retry pace of an unreachable server.
        case 413: return .notAuthenticated(reason: "the server refuses a request this large (\(what))")
        case 404, 410: return .noSuchItem(path.identifier)
        case 412: return .versionNoLongerAvailable
        case 507: return .insufficientQuota
        case 500...599: return .serverUnreachable(reason: what)
        default: return .cannotSynchronize(reason: what)
        }
    }

    private static func describe(_ error: any Error, url: String) -> String {
        let authority = url.range(of: "://").map { String(url[$0.upperBound...]) } ?? url
        if let refused = RefusedConnection.reason(for: error, authority: authority) { return refused }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return "no connection to \(url) within the connect timeout"
            case .readTimeout: return "\(url) stopped answering"
            case .remoteConnectionClosed: return "\(url) closed the connection"
            default: return "\(url): \(error)"
            }
        }
        return "\(url): \(error)"
    }
}

extension Duration {
    /// The whole duration in nanoseconds, saturating.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product + attoseconds / 1_000_000_000
    }
}
