import FileProviderKit
import Foundation
import ProviderTesting
import TestServers
import Testing

@testable import S3Provider

/// Answers a provider must refuse, made by a proxy that spoils what Ceph RGW sends: a body
/// shorter than its Content-Length, a Content-Range other than the range asked for, a listing cut
/// in the middle, a listing naming a key outside the mounted prefix. Each fails with
/// `cannotSynchronize` or `serverUnreachable` (EIO or EHOSTDOWN), nothing of it accepted.
@Suite struct S3HostileResponseTests {
    /// `pass` spoils nothing: the proxy itself keeps signatures valid, so the refusals are the
    /// spoiled answers' doing.
    @Test(arguments: ["pass-read", "pass-list", "short", "range", "xml", "escape"])
    func spoiledAnswerIsRefused(mode: String) async throws {
        let server = try await S3TestServer.shared()
        let bucket = try await Self.bucket(on: server, label: "hostile\(mode)")
        let proxy = try await S3FaultProxy.start(inFrontOf: server, mode: mode.hasPrefix("pass") ? "pass" : mode)
        defer { proxy.stop() }
        let provider = try Self.provider(of: server, bucket: bucket, through: proxy)
        let sink = MemorySink()
        let outcome = await Result(catching: { () -> String in
            switch mode {
            case "short", "range", "pass-read":
                return try await Self.fetchBlock(from: provider, into: sink)
            default:
                let page = try await provider.enumerator(for: .rootContainer).enumerateItems(
                    startingAt: .initial, suggestedPageSize: 100)
                return "listed \(page.items.map(\.filename))"
            }
        })
        await provider.invalidate()
        switch outcome {
        case .success(let what) where mode.hasPrefix("pass"):
            #expect(what == (mode == "pass-read" ? "fetched 65536..<131072" : "listed [big.bin]"), "\(what)")
            #expect(mode == "pass-list" || sink.bytes(in: 65_536..<131_072) == Array(Self.contents[65_536..<131_072]))
        case .failure(ProviderError.cannotSynchronize),
            .failure(ProviderError.serverUnreachable)
        where !mode.hasPrefix("pass"):
            break
        default:
            Issue.record("\(mode): the spoiled answer gave \(outcome)")
        }
    }

    /// Proxies started at the same moment each listen on a port of their own and spoil in their
    /// own mode: when the test picked the port, two proxies could get the same one, the second
    /// failed to listen but read the first one's "ready", and a `short` test fetched unspoiled
    /// bytes through a `pass` proxy (spoiledAnswerIsRefused(short) once succeeded in CI).
    @Test func proxiesStartedTogetherKeepTheirModes() async throws {
        let server = try await S3TestServer.shared()
        let bucket = try await Self.bucket(on: server, label: "together")
        let modes = (0..<16).map { $0.isMultiple(of: 2) ? "pass" : "short" }
        let started = await withTaskGroup(of: (String, S3FaultProxy?).self) { group in
            for mode in modes { group.addTask { (mode, try? await S3FaultProxy.start(inFrontOf: server, mode: mode)) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        defer { for case (_, let proxy?) in started { proxy.stop() } }
        let proxies = started.compactMap { mode, proxy in proxy.map { (mode, $0) } }
        try #require(proxies.count == modes.count)
        #expect(Set(proxies.map(\.1.endpoint)).count == modes.count)
        for (mode, proxy) in proxies {
            let provider = try Self.provider(of: server, bucket: bucket, through: proxy)
            let outcome = await Result(catching: { try await Self.fetchBlock(from: provider, into: MemorySink()) })
            await provider.invalidate()
            switch (mode, outcome) {
            case ("pass", .success), ("short", .failure(ProviderError.cannotSynchronize)),
                ("short", .failure(ProviderError.serverUnreachable)):
                break
            default: Issue.record("a \(mode) proxy gave \(outcome)")
            }
            // This provider's one GET, in this proxy's log and no other's.
            #expect(try proxy.answers().filter { $0.method == "GET" }.count == 1, "\(mode) \(proxy.endpoint)")
        }
    }

    /// The 256 KiB object the read tests fetch a block of, `p/big.bin`.
    static let contents = ConformanceFixture.pattern(count: 256 << 10, seed: 3)

    /// A bucket of its own holding `contents` as `p/big.bin`.
    static func bucket(on server: S3TestServer, label: String) async throws -> String {
        let bucket = S3TestServer.bucketName(label)
        try await server.makeBucket(bucket)
        try await server.put(Data(contents), bucket: bucket, key: "p/big.bin")
        return bucket
    }

    /// A provider of the bucket's prefix `p` through `proxy`, without retries: a spoiled answer
    /// is the outcome, not a retried one.
    static func provider(of server: S3TestServer, bucket: String, through proxy: S3FaultProxy) throws -> S3Provider {
        var configuration = S3ConformanceTests.configuration(server, bucket: bucket, prefix: "p")
        configuration.endpoint = proxy.endpoint
        configuration.retries = 0
        return try S3Provider(configuration: configuration)
    }

    /// The second 64 KiB block of `big.bin`, asked as an engine asks a 4 KiB read at 64 KiB.
    static func fetchBlock(from provider: S3Provider, into sink: MemorySink) async throws -> String {
        let item = try await provider.item(for: ItemIdentifier("big.bin"))
        let result = try await provider.fetchPartialContents(
            for: item.identifier, version: item.version, minimalRange: 65_536..<69_632, aligningTo: 65_536,
            options: .strictVersioning, into: sink)
        return "fetched \(result.retrievedRange)"
    }

    /// 503 SlowDown is retried with growing, jittered pauses; a server that keeps answering it is
    /// unreachable (EHOSTDOWN), after the retries and not before.
    @Test(arguments: ["slowdown", "overloaded"])
    func slowDownIsRetriedThenUnreachable(mode: String) async throws {
        let server = try await S3TestServer.shared()
        let bucket = S3TestServer.bucketName(mode)
        try await server.makeBucket(bucket)
        try await server.put(Data("x".utf8), bucket: bucket, key: "a.txt")
        let proxy = try await S3FaultProxy.start(inFrontOf: server, mode: mode)
        defer { proxy.stop() }
        var configuration = S3ConformanceTests.configuration(server, bucket: bucket)
        configuration.endpoint = proxy.endpoint
        configuration.retries = 2
        let provider = try S3Provider(configuration: configuration)
        let started = ContinuousClock.now
        let outcome = await Result(catching: { try await provider.item(for: ItemIdentifier("a.txt")) })
        let waited = ContinuousClock.now - started
        await provider.invalidate()
        let answers = try proxy.answers()
        #expect(answers.count == 3, "\(answers)")
        // Pauses of 100–200 ms and 400–800 ms before the second and third attempts.
        #expect(waited >= .milliseconds(500), "\(waited)")
        if mode == "slowdown" {
            #expect(try outcome.get().size == 1)
        } else {
            guard case .failure(ProviderError.serverUnreachable(let reason)) = outcome else {
                Issue.record("an overloaded server gave \(outcome)")
                return
            }
            #expect(reason.contains("503"), "\(reason)")  // a HEAD's answer has no body to name SlowDown
        }
    }

    /// A full quota (403 QuotaExceeded, 507 InsufficientQuota) is `insufficientQuota` (EDQUOT); an
    /// object too large (EntityTooLarge) `notAuthenticated`: both refusals, which the engine does
    /// not retry every second.
    @Test(arguments: ["quota", "full", "toolarge"])
    func refusedWriteIsMapped(mode: String) async throws {
        let server = try await S3TestServer.shared()
        let bucket = S3TestServer.bucketName(mode)
        try await server.makeBucket(bucket)
        let proxy = try await S3FaultProxy.start(inFrontOf: server, mode: mode)
        defer { proxy.stop() }
        var configuration = S3ConformanceTests.configuration(server, bucket: bucket)
        configuration.endpoint = proxy.endpoint
        let provider = try S3Provider(configuration: configuration)
        let template = Item(
            identifier: ItemIdentifier("local"), parentIdentifier: .rootContainer, filename: "a.txt", kind: .file,
            version: ItemVersion(content: [], metadata: []))
        let outcome = await Result(catching: {
            try await provider.createItem(basedOn: template, fields: [.contents], contents: nil, options: [])
        })
        await provider.invalidate()
        switch (mode, outcome) {
        case ("quota", .failure(ProviderError.insufficientQuota)), ("full", .failure(ProviderError.insufficientQuota)):
            break
        case ("toolarge", .failure(ProviderError.notAuthenticated(let reason))):
            #expect(reason.contains("refuses an object this large") && reason.contains("EntityTooLarge"), "\(reason)")
        default: Issue.record("\(mode) gave \(outcome)")
        }
    }
}
