import FileProviderKit
import Foundation
import MetadataStore
import Testing

@Suite("Block maps in the store")
struct PresentBlocksTests {
    @Test("a map of the same length is written where it changed and reads back whole after a reopen")
    func changedBytesAreWrittenInPlace() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "fpfs-blocks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appending(path: "store.sqlite")
        // 200 KiB of map: a 100 GiB file in 64 KiB blocks, far beyond one page of the database.
        let count = 200 << 10
        var map = [UInt8](repeating: 0, count: count)
        do {
            let store = try MetadataStore(file: file)
            _ = try await store.beginContent(
                ContentRecord(
                    fileNumber: 1, identifier: ItemIdentifier("big"), contentVersion: [1], size: 100 << 30,
                    blockSize: 64 << 10, presentBlocks: [], lastUsed: Date()))
            var recorded: [UInt8] = []
            for (offset, bits) in [(0, 0x01), (count / 2, 0xFF), (count - 1, 0x80), (count / 2 + 1, 0x0F)] {
                map[offset] |= UInt8(bits)
                try await store.savePresentBlocks(fileNumber: 1, presentBlocks: map, replacing: recorded, epoch: 0)
                recorded = map
                #expect(try await store.contentRecords().first?.presentBlocks == map)
            }
            // Nothing changed: nothing to write, and the map stays.
            try await store.savePresentBlocks(fileNumber: 1, presentBlocks: map, replacing: map, epoch: 0)
            // A map of another length replaces the row's.
            let shorter = [UInt8](repeating: 0xAA, count: 3)
            try await store.savePresentBlocks(fileNumber: 1, presentBlocks: shorter, replacing: map, epoch: 0)
            #expect(try await store.contentRecords().first?.presentBlocks == shorter)
            try await store.savePresentBlocks(fileNumber: 1, presentBlocks: map, replacing: shorter, epoch: 0)
        }
        let reopened = try MetadataStore(file: file)
        #expect(try await reopened.contentRecords().first?.presentBlocks == map)
    }

    @Test("a map saved for a cache file whose row is gone (its content was discarded) leaves it gone")
    func aRemovedRowStaysRemoved() async throws {
        let store = try MetadataStore()
        _ = try await store.beginContent(
            ContentRecord(
                fileNumber: 1, identifier: ItemIdentifier("gone"), contentVersion: [1], size: 1 << 20,
                blockSize: 64 << 10, presentBlocks: [0, 0], lastUsed: Date()))
        try await store.removeContent(fileNumber: 1)
        try await store.savePresentBlocks(fileNumber: 1, presentBlocks: [1, 0], replacing: [0, 0], epoch: 0)
        try await store.savePresentBlocks(fileNumber: 1, presentBlocks: [1, 0, 0], replacing: [1, 0], epoch: 0)
        #expect(try await store.contentRecords().isEmpty)
    }
}
