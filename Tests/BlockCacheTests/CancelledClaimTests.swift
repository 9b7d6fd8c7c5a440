import BlockCache
import FileProviderKit
import Foundation
import MetadataStore
import SystemPackage
import Testing

/// A stopped pin cancels the claims no reader waits on (DECISIONS 240): `isWaitedOn` tells them
/// apart, and a cancelled claim is not remembered as a failure of the remote.
@Suite("Block cache: cancelled claims")
struct CancelledClaimTests {
    private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cancel-\(UUID())")
    private static let blockSize: UInt64 = 4096
    private static let granularity = CachedContent.FetchGranularity.blocks(blockSize)

    private func makeContent(_ name: String) async throws -> CachedContent {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try MetadataStore(file: directory.appendingPathComponent("metadata.sqlite"))
        let cache = try await BlockCache(
            directory: FilePath(directory.appendingPathComponent("blocks").path), blockSize: Self.blockSize,
            store: store)
        return try await cache.content(for: ItemIdentifier(name), contentVersion: [1], size: 2 * Self.blockSize)
    }

    @Test func aClaimIsWaitedOnWhileAReaderWaitsAndACancelledOneIsClaimedAgain() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let content = try await makeContent("item")
        let claim = try #require(content.claimMissing(in: 0..<2 * Self.blockSize, granularity: Self.granularity).first)
        #expect(!content.isWaitedOn(claim), "a read-ahead claim has no reader")

        let reader = Task {
            try await content.waitUntilPresent(
                0..<Self.blockSize, granularity: Self.granularity, start: { _ in }, joined: { _ in })
        }
        while !content.isWaitedOn(claim) { try await Task.sleep(for: .milliseconds(1)) }
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
        #expect(!content.isWaitedOn(claim), "a reader that gave up still counts")

        content.finish(claim, error: CancellationError())
        // The next reader claims the bytes again rather than getting the cancellation.
        let claimedAgain = Task {
            try await content.waitUntilPresent(
                0..<Self.blockSize, granularity: Self.granularity,
                start: { claims in
                    Task { try await content.write([UInt8](repeating: 1, count: Int(Self.blockSize)), at: 0) }
                    #expect(claims.count == 1)
                }, joined: { _ in })
        }
        try await claimedAgain.value
        #expect(content.isPresent(0..<Self.blockSize))
    }

    @Test func aFailedClaimAnswersTheNextReaderAtOnce() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let content = try await makeContent("failing")
        let claim = try #require(content.claimMissing(in: 0..<Self.blockSize, granularity: Self.granularity).first)
        content.finish(claim, error: ProviderError.cannotSynchronize(reason: "refused"))
        await #expect(throws: ProviderError.self) {
            try await content.waitUntilPresent(
                0..<Self.blockSize, granularity: Self.granularity, start: { _ in }, joined: { _ in })
        }
    }
}
