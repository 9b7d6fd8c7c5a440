import BlockCache
import FileProviderKit
import Foundation
import MetadataStore
import SystemPackage
import Testing

/// A commit records its blocks without an fsync; they are trusted after a crash of the machine
/// (a restart under another boot id) only once their epoch closed (DECISIONS 154).
@Suite("Block cache: durability epochs")
struct DurabilityEpochCacheTests {
    private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("epochs-\(UUID())")
    private var blocks: FilePath { FilePath(directory.appendingPathComponent("blocks").path) }
    private static let blockSize: UInt64 = 4096
    private static let item = ItemIdentifier("item")

    private func openStore() throws -> MetadataStore {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try MetadataStore(file: directory.appendingPathComponent("metadata.sqlite"))
    }

    /// A cache under `bootID` with one committed block of `item`.
    private func cacheWithACommittedBlock(store: MetadataStore, bootID: String) async throws -> BlockCache {
        let cache = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store, bootID: bootID)
        let content = try await cache.content(for: Self.item, contentVersion: [1], size: 2 * Self.blockSize)
        try await content.write([UInt8](repeating: 7, count: Int(Self.blockSize)), at: 0)
        try await cache.commit(content)
        return cache
    }

    private func localBytes(_ cache: BlockCache) -> UInt64 {
        cache.localBytes(of: Self.item, contentVersion: [1])
    }

    @Test func aCrashBeforeTheEpochClosedForgetsItsBlocks() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try openStore()
        let cache = try await cacheWithACommittedBlock(store: store, bootID: "before")
        #expect(localBytes(cache) == Self.blockSize)

        let afterCrash = try await BlockCache(
            directory: blocks, blockSize: Self.blockSize, store: store, bootID: "after")
        #expect(afterCrash.contentsForgottenAtStart == 1)
        #expect(localBytes(afterCrash) == 0)
    }

    @Test func aClosedEpochsBlocksSurviveACrash() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try openStore()
        let cache = try await cacheWithACommittedBlock(store: store, bootID: "before")
        #expect(try await cache.closeDurabilityEpoch().isEmpty)

        let afterCrash = try await BlockCache(
            directory: blocks, blockSize: Self.blockSize, store: store, bootID: "after")
        #expect(afterCrash.contentsForgottenAtStart == 0)
        #expect(localBytes(afterCrash) == Self.blockSize)
    }

    /// A killed daemon left its bytes with the kernel: the next mount flushes them and keeps the
    /// blocks, even through a later crash.
    @Test func aRestartUnderTheSameBootKeepsTheBlocks() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try openStore()
        _ = try await cacheWithACommittedBlock(store: store, bootID: "same")

        let restarted = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store, bootID: "same")
        #expect(restarted.contentsForgottenAtStart == 0)
        #expect(localBytes(restarted) == Self.blockSize)
        let afterCrash = try await BlockCache(
            directory: blocks, blockSize: Self.blockSize, store: store, bootID: "other")
        #expect(localBytes(afterCrash) == Self.blockSize)
    }

    @Test func aFileDeletedBeforeItsEpochClosesIsNotForgottenAgain() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try openStore()
        let cache = try await cacheWithACommittedBlock(store: store, bootID: "before")
        await cache.discard(Self.item)
        #expect(try await cache.closeDurabilityEpoch().isEmpty)
        #expect(try await store.contentRecords().isEmpty)
    }

    /// An idle mount's timer writes nothing: the epoch stays, and the next mount's is the one after.
    @Test func closingAnEpochWithNothingRecordedLeavesTheStoreAlone() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try openStore()
        let cache = try await BlockCache(directory: blocks, blockSize: Self.blockSize, store: store, bootID: "boot")
        #expect(try await cache.closeDurabilityEpoch().isEmpty)
        #expect(try await cache.closeDurabilityEpoch().isEmpty)
        #expect(try await store.beginDurabilityEpochs(bootID: "boot").epoch == 2)
    }
}
