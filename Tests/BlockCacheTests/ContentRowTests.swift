import BlockCache
import FileProviderKit
import Foundation
import MetadataStore
import SystemPackage
import Testing

/// A new cache file's row is written in the store beside the first fetch, not before it: what a
/// commit records, what a restart finds, how files are numbered and deleted must not change.
@Suite("Block cache: the rows of new cache files")
struct ContentRowTests {
    private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rows-\(UUID())")
    private var blocks: FilePath { FilePath(directory.appendingPathComponent("blocks").path) }
    private static let blockSize: UInt64 = 4096

    private func openStore() throws -> MetadataStore {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try MetadataStore(file: directory.appendingPathComponent("metadata.sqlite"))
    }

    private func files() throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: blocks.string))
    }

    /// Opens `name`'s content at `version` (8 KiB) and lands its first block.
    private func landFirstBlock(
        of name: String, version: UInt8 = 1, in cache: BlockCache
    ) async throws -> CachedContent {
        let content = try await cache.content(
            for: ItemIdentifier(name), contentVersion: [version], size: 2 * Self.blockSize)
        try await content.write([UInt8](repeating: version, count: Int(Self.blockSize)), at: 0)
        return content
    }

    @Test func onlyCommittedBlocksAreKnownAfterARestart() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try openStore()
        let cache = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store)
        let committed = try await landFirstBlock(of: "committed", in: cache)
        try await cache.commit(committed)
        _ = try await landFirstBlock(of: "landed", in: cache)

        let restarted = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store)
        #expect(restarted.localBytes(of: ItemIdentifier("committed"), contentVersion: [1]) == Self.blockSize)
        #expect(restarted.localBytes(of: ItemIdentifier("landed"), contentVersion: [1]) == 0)
    }

    @Test func fileNumbersAreNotHandedOutTwiceAfterTheNewestIsEvicted() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try openStore()
        let cache = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store)
        var first: CachedContent? = try await landFirstBlock(of: "first", in: cache)
        let firstNumber = try #require(first?.fileNumber)
        try await cache.commit(try #require(first))
        first = nil
        #expect(try await cache.evict(ItemIdentifier("first")) == Self.blockSize)

        let restarted = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store)
        let second = try await landFirstBlock(of: "second", in: restarted)
        #expect(second.fileNumber > firstNumber)
        // The row of a new cache file is written in the background; a commit waits for it.
        try await restarted.commit(second)
        #expect(try await store.contentRecords().map(\.fileNumber) == [second.fileNumber])
    }

    /// Discarding a content (the remote changed it) right after it was opened, its row perhaps
    /// still being written, leaves neither row nor file.
    @Test func discardingAContentJustOpenedLeavesNeitherRowNorFile() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try openStore()
        let cache = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store)
        for round in 0..<20 {
            let identifier = ItemIdentifier("item-\(round)")
            _ = try await cache.content(for: identifier, contentVersion: [1], size: Self.blockSize)
            await cache.discard(identifier)
        }
        #expect(try await store.contentRecords().isEmpty)
        #expect(try files().isEmpty)
    }

    @Test func aNewVersionReplacesTheOldRowAndDeletesItsFile() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try openStore()
        let cache = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store)
        var old: CachedContent? = try await landFirstBlock(of: "item", version: 1, in: cache)
        try await cache.commit(try #require(old))
        old = nil
        let new = try await landFirstBlock(of: "item", version: 2, in: cache)
        try await cache.commit(new)
        #expect(try await store.contentRecords().map(\.fileNumber) == [new.fileNumber])
        #expect(try files() == [String(new.fileNumber)])
        #expect(cache.localBytes(of: ItemIdentifier("item"), contentVersion: [2]) == Self.blockSize)
    }

    /// A content cached by a mount with larger blocks keeps its bytes in a mount with smaller ones
    /// and records the small blocks that land (in the old size, a part of an old block is not
    /// recorded); back in the larger size, only whole large blocks are kept.
    @Test func aContentOfAnotherBlockSizeTakesTheMountsWhenItOpens() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try openStore()
        let large = 4 * Self.blockSize
        let identifier = ItemIdentifier("item")
        let first = try await BlockCache(directory: blocks, blockSize: large, store: store)
        var content: CachedContent? = try await first.content(for: identifier, contentVersion: [1], size: 4 * large)
        try await content?.write([UInt8](repeating: 7, count: Int(large)), at: 0)
        try await first.commit(try #require(content))
        let fileNumber = try #require(content?.fileNumber)
        content = nil

        let small = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store)
        content = try await small.content(for: identifier, contentVersion: [1], size: 4 * large)
        #expect(content?.fileNumber == fileNumber)
        #expect(content?.blockSize == Self.blockSize)
        #expect(content?.presentBytes == large)
        #expect(try await content?.read(offset: large - 1, length: 1) == [7])
        try await content?.write([UInt8](repeating: 8, count: Int(Self.blockSize)), at: 2 * large)
        try await small.commit(try #require(content))
        content = nil

        let again = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store)
        #expect(again.localBytes(of: identifier, contentVersion: [1]) == large + Self.blockSize)
        #expect(try await store.contentRecords().map(\.blockSize) == [Self.blockSize])

        let larger = try await BlockCache(directory: blocks, blockSize: large, store: store)
        #expect(larger.localBytes(of: identifier, contentVersion: [1]) == large + Self.blockSize)
        let reopened = try await larger.content(for: identifier, contentVersion: [1], size: 4 * large)
        #expect(reopened.presentBytes == large)
        #expect(try await store.contentRecords().map(\.blockSize) == [large])
    }

    /// A commit records no block of a fetch still running (another fetch's commit may come while
    /// it does): its bytes count once it has ended well, and are forgotten if it fails.
    @Test func aCommitLeavesOutTheBlocksOfFetchesStillRunning() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try openStore()
        let cache = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store)
        let content = try await cache.content(
            for: ItemIdentifier("item"), contentVersion: [1], size: 4 * Self.blockSize)
        let granularity = CachedContent.FetchGranularity.blocks(Self.blockSize)
        let good = try #require(content.claimMissing(in: 0..<2 * Self.blockSize, granularity: granularity).first)
        let bad = try #require(
            content.claimMissing(in: 2 * Self.blockSize..<4 * Self.blockSize, granularity: granularity).first)
        try await content.write([UInt8](repeating: 1, count: Int(Self.blockSize)), at: 0)
        try await content.write([UInt8](repeating: 2, count: Int(Self.blockSize)), at: 2 * Self.blockSize)
        try await cache.commit(content)
        #expect(
            try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store)
                .localBytes(of: ItemIdentifier("item"), contentVersion: [1]) == 0)

        try await content.write([UInt8](repeating: 1, count: Int(Self.blockSize)), at: Self.blockSize)
        content.finish(good, error: nil)
        content.finish(bad, error: CancellationError())
        try await cache.commit(content)
        let restarted = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store)
        #expect(restarted.localBytes(of: ItemIdentifier("item"), contentVersion: [1]) == 2 * Self.blockSize)
    }
}
