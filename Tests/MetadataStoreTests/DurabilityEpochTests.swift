import FileProviderKit
import Foundation
import MetadataStore
import Testing

@Suite("Durability epochs of recorded blocks")
struct DurabilityEpochTests {
    /// A store in a fresh folder, removed by the caller's `cleanUp`.
    static func storeFile() throws -> (file: URL, cleanUp: () -> Void) {
        let folder = FileManager.default.temporaryDirectory.appending(path: "fpfs-epochs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return (folder.appending(path: "store.sqlite"), { try? FileManager.default.removeItem(at: folder) })
    }

    static func record(_ fileNumber: Int64, in store: MetadataStore) async throws {
        _ = try await store.beginContent(
            ContentRecord(
                fileNumber: fileNumber, identifier: ItemIdentifier("f\(fileNumber)"), contentVersion: [1],
                size: 4 << 20, blockSize: 64 << 10, presentBlocks: [0, 0, 0, 0, 0, 0, 0, 0], lastUsed: Date()))
    }

    static func maps(_ store: MetadataStore) async throws -> [Int64: [UInt8]] {
        Dictionary(uniqueKeysWithValues: try await store.contentRecords().map { ($0.fileNumber, $0.presentBlocks) })
    }

    @Test("a mount under the same boot settles every earlier epoch; under another it forgets those not durable")
    func anotherBootForgetsBlocksNotDurable() async throws {
        let (file, cleanUp) = try Self.storeFile()
        defer { cleanUp() }
        let full: [UInt8] = [0xFF, 0, 0, 0, 0, 0, 0, 1]
        let none: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0]
        do {
            let store = try MetadataStore(file: file)
            let first = try await store.beginDurabilityEpochs(bootID: "boot-a")
            #expect(first.epoch == 1 && first.forgottenContents == 0)
            for number: Int64 in 1...3 { try await Self.record(number, in: store) }
            try await store.savePresentBlocks(fileNumber: 1, presentBlocks: full, replacing: none, epoch: first.epoch)
            let second = try await store.advanceDurabilityEpoch()
            #expect(second == 2)
            try await store.markDurable(through: first.epoch)
            try await store.savePresentBlocks(fileNumber: 2, presentBlocks: full, replacing: none, epoch: second)
        }
        do {
            // The daemon was killed, and the next mount flushed what the kernel still held: epoch 2
            // is settled.
            let store = try MetadataStore(file: file)
            let again = try await store.beginDurabilityEpochs(bootID: "boot-a")
            #expect(again.epoch == 3 && again.forgottenContents == 0)
            #expect(try await Self.maps(store) == [1: full, 2: full, 3: none])
            try await store.savePresentBlocks(fileNumber: 3, presentBlocks: full, replacing: none, epoch: again.epoch)
        }
        // The machine went down during epoch 3: file 3's blocks are forgotten.
        let store = try MetadataStore(file: file)
        let afterCrash = try await store.beginDurabilityEpochs(bootID: "boot-b")
        #expect(afterCrash.epoch == 4 && afterCrash.forgottenContents == 1)
        #expect(try await Self.maps(store) == [1: full, 2: full, 3: none])
        // What was forgotten is settled: the next boot forgets nothing more.
        let next = try await store.beginDurabilityEpochs(bootID: "boot-c")
        #expect(next.forgottenContents == 0)
    }

    @Test("blocks recorded before epochs existed count as durable")
    func blocksWithoutAnEpochStay() async throws {
        let (file, cleanUp) = try Self.storeFile()
        defer { cleanUp() }
        let map: [UInt8] = [1, 1, 0, 0, 0, 0, 0, 0]
        do {
            let store = try MetadataStore(file: file)
            try await Self.record(1, in: store)
            try await store.savePresentBlocks(fileNumber: 1, presentBlocks: map, replacing: [], epoch: 0)
        }
        let store = try MetadataStore(file: file)
        _ = try await store.beginDurabilityEpochs(bootID: "boot-a")
        let other = try await store.beginDurabilityEpochs(bootID: "boot-b")
        #expect(other.forgottenContents == 0)
        #expect(try await Self.maps(store) == [1: map])
    }
}
