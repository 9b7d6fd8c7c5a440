import FileProviderKit
import Foundation
import TestServers
import Testing

@testable import MetadataStore

/// The store keeps room for its own writes on a disk something else filled (SpaceReserve).
@Suite("The store's space reserve")
struct SpaceReserveTests {
    @Test("a store on a full disk gives up its reserve to write, and takes it back once there is room")
    func fullDisk() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reserve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(await run(["mount", "-t", "tmpfs", "-o", "size=16m", "fpfs-test-reserve", folder.path]) == 0)
        defer { _ = try? ChildProcess.runBlocking(["umount", "-l", folder.path]) }
        let reserve = folder.appendingPathComponent("space-reserve").path

        let store = try MetadataStore(file: folder.appendingPathComponent("metadata.sqlite"))
        _ = try await store.saveRoot(
            Item(
                identifier: .rootContainer, parentIdentifier: .rootContainer, filename: Filename(""),
                kind: .directory, version: ItemVersion(content: "", metadata: "")))
        #expect(FileManager.default.fileExists(atPath: reserve))
        // What the kernel's own writes of a passthrough file do: fill the disk to its last block.
        let filler = folder.appendingPathComponent("filler").path
        #expect(await run(["dd", "if=/dev/zero", "of=\(filler)", "bs=64k", "status=none"]) != 0)

        let items = (0..<2000).map { index in
            Item(
                identifier: ItemIdentifier("f\(index)"), parentIdentifier: .rootContainer,
                filename: Filename("a file with a long enough name, number \(index)"), kind: .file, size: 1,
                version: ItemVersion(content: "1", metadata: "1"))
        }
        _ = try await store.upsert(items)
        #expect(!FileManager.default.fileExists(atPath: reserve), "the reserve was given up for the write")
        #expect(try await store.children(of: .rootContainer).count == 2000)

        try FileManager.default.removeItem(atPath: filler)
        let deadline = ContinuousClock.now + .seconds(20)
        while !FileManager.default.fileExists(atPath: reserve), ContinuousClock.now < deadline {
            _ = try await store.upsert([items[0]])
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(FileManager.default.fileExists(atPath: reserve), "the reserve is taken back")
    }

    private func run(_ arguments: [String]) async -> Int32 {
        (try? await ChildProcess.run(arguments))?.status ?? -1
    }
}
