import FileProviderKit
import Foundation
import NIOCore
import ProviderTesting
import TestServers
import Testing

@testable import WebDAVProvider

/// Answers read through the client's delegate path, against Apache: a body too long for its
/// reader, one dropped, one its sink refuses. Each ends its request without a hang, with the error
/// its caller should see, and the client serves the next request. A body whose head an admission
/// accepts reaches its sink before the caller asks for it; one it refuses waits for the caller.
@Suite struct StreamedBodyTests {
    /// A file of `size` bytes served by Apache, and a client of it.
    private static func withServedFile(
        size: Int, _ body: (WebDAVClient, RemotePath) async throws -> Void
    ) async throws {
        let folder = try ServedFolder()
        defer { folder.remove() }
        try Data(repeating: 7, count: size).write(to: folder.url.appending(path: "big.bin"))
        try Data("small".utf8).write(to: folder.url.appending(path: "small.txt"))
        try folder.openToServer()
        let server = try await WebDAVTestServer.start(.apache, serving: folder.url)
        defer { server.stop() }
        let client = try WebDAVClient(configuration: .init(url: server.url))
        let outcome = await Result { try await body(client, RemotePath(components: [Filename("big.bin")])) }
        await client.shutdown()
        try outcome.get()
    }

    /// The client still answers: a small file read whole.
    private static func expectServing(_ client: WebDAVClient) async throws {
        let (response, body) = try await client.sendCollecting(
            WebDAVClient.Request(method: .GET, path: RemotePath(components: [Filename("small.txt")])))
        #expect(response.status == .ok)
        #expect(String(buffer: body) == "small")
    }

    @Test func aBodyLongerThanItsReaderTakesFailsItsRequest() async throws {
        try await Self.withServedFile(size: 3 << 20) { client, path in
            let failure = await Result {
                try await client.sendCollecting(WebDAVClient.Request(method: .GET, path: path), limit: 4096)
            }
            guard case .failure(ProviderError.serverUnreachable(let reason)) = failure else {
                Issue.record("reading 3 MiB with a 4 KiB limit gave \(failure)")
                return
            }
            #expect(reason.contains("longer than expected"), "\(reason)")
            try await Self.expectServing(client)
        }
    }

    @Test func aDroppedBodyLeavesTheClientServing() async throws {
        try await Self.withServedFile(size: 3 << 20) { client, path in
            let response = try await client.sendStreaming(WebDAVClient.Request(method: .GET, path: path))
            #expect(response.status == .ok)
            await response.discardBody()
            try await Self.expectServing(client)
        }
    }

    @Test func anAdmittedBodyReachesItsSinkBeforeTheCallerAsks() async throws {
        try await Self.withServedFile(size: 3 << 20) { client, path in
            let sink = MemorySink()
            let response = try await client.sendStreaming(
                WebDAVClient.Request(method: .GET, path: path),
                admitting: StreamedBody.Admission(sink: sink) { $0.status == .ok ? 0 : nil })
            let deadline = ContinuousClock.now + .seconds(10)
            while sink.byteCount < 3 << 20, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(sink.byteCount == 3 << 20, "the body did not reach its sink before the caller asked")
            #expect(try await response.body.stream(into: sink, from: 0) == 3 << 20)
            #expect(sink.writtenRanges == [0..<3 << 20])
            #expect(sink.violations.isEmpty, "\(sink.violations)")
            try await Self.expectServing(client)
        }
    }

    @Test func aBodyItsAdmissionRefusesWaitsForTheCaller() async throws {
        try await Self.withServedFile(size: 3 << 20) { client, path in
            let sink = MemorySink()
            let response = try await client.sendStreaming(
                WebDAVClient.Request(method: .GET, path: path),
                admitting: StreamedBody.Admission(sink: sink) { _ in nil })
            try await Task.sleep(for: .milliseconds(200))
            #expect(sink.byteCount == 0)
            await response.discardBody()
            #expect(sink.byteCount == 0)
            try await Self.expectServing(client)
        }
    }

    @Test func aSinkRefusingTheBytesEndsTheStreamWithItsError() async throws {
        try await Self.withServedFile(size: 3 << 20) { client, path in
            let response = try await client.sendStreaming(WebDAVClient.Request(method: .GET, path: path))
            let failure = await Result { try await response.body.stream(into: RefusingSink(), from: 0) }
            guard case .failure(let error) = failure, error is RefusingSink.Refusal else {
                Issue.record("streaming into a refusing sink gave \(failure)")
                return
            }
            try await Self.expectServing(client)
        }
    }
}

/// A sink that refuses every write, through `write(_:at:)` (the fallback the delegate path uses).
private struct RefusingSink: ContentSink {
    struct Refusal: Error {}

    func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws {
        throw Refusal()
    }
}
