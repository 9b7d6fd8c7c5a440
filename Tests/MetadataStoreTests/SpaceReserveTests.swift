import FileProviderKit
import Foundation
import TestServers
import Testing

@testable import MetadataStore

/// The store keeps room for its own writes on a disk something else filled (SpaceReserve).
@Suite("The store's space reserve")
struct SpaceReserveTests {
    @Test(
        "a store on a full disk gives up a slice of its reserve to write, again after the disk filled up once more, and takes it back once there is room"
    )
    func fullDisk() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reserve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(await run(["mount", "-t", "tmpfs", "-o", "size=16m", "fpfs-test-reserve", folder.path]) == 0)
        defer { _ = try? ChildProcess.runBlocking(["umount", "-l", folder.path]) }
        let reserve = folder.appendingPathComponent("space-reserve").path
        let whole = SpaceReserve.size(forDiskOf: 16 << 20)

        let store = try MetadataStore(file: folder.appendingPathComponent("metadata.sqlite"))
        _ = try await store.saveRoot(
            Item(
                identifier: .rootContainer, parentIdentifier: .rootContainer, filename: Filename(""),
                kind: .directory, version: ItemVersion(content: "", metadata: "")))
        #expect(allocatedBytes(reserve) == whole)
        // What the kernel's own writes of a passthrough file do: fill the disk to its last block.
        let filler = folder.appendingPathComponent("filler").path
        #expect(await run(["dd", "if=/dev/zero", "of=\(filler)", "bs=64k", "status=none"]) != 0)

        let items = files(2000, named: "a file with a long enough name, number")
        _ = try await store.upsert(items)
        let afterFirst = allocatedBytes(reserve)
        #expect(afterFirst < whole, "a slice of the reserve was given up for the write")
        #expect(afterFirst >= whole / 2, "not the whole reserve")
        #expect(try await store.children(of: .rootContainer).count == 2000)

        // A file still being written takes what was freed; the next write gets another slice.
        #expect(await run(["dd", "if=/dev/zero", "of=\(filler)-2", "bs=64k", "status=none"]) != 0)
        // Twice as many rows as before, so that the log has to grow past what the first write left.
        _ = try await store.upsert(files(4000, named: "added after the disk filled up again, number"))
        #expect(try await store.children(of: .rootContainer).count == 6000)
        #expect(allocatedBytes(reserve) < afterFirst, "another slice was given up")
        #expect(allocatedBytes(reserve) > 0, "some is left for the next")

        try FileManager.default.removeItem(atPath: filler)
        try FileManager.default.removeItem(atPath: filler + "-2")
        let deadline = ContinuousClock.now + .seconds(20)
        while allocatedBytes(reserve) < whole, ContinuousClock.now < deadline {
            _ = try await store.upsert([items[0]])
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(allocatedBytes(reserve) == whole, "the reserve is taken back")
    }

    /// `count` one-byte files in the root, named `name` and their number (which is their identifier
    /// too, so that different names make different files).
    private func files(_ count: Int, named name: String) -> [Item] {
        (0..<count).map { index in
            Item(
                identifier: ItemIdentifier("\(name) \(index)"), parentIdentifier: .rootContainer,
                filename: Filename("\(name) \(index)"), kind: .file, size: 1,
                version: ItemVersion(content: "1", metadata: "1"))
        }
    }

    /// The bytes allocated to the file at `path` (0 when there is none).
    private func allocatedBytes(_ path: String) -> Int64 {
        var status = stat()
        return stat(path, &status) == 0 ? Int64(status.st_blocks) * 512 : 0
    }

    private func run(_ arguments: [String]) async -> Int32 {
        (try? await ChildProcess.run(arguments))?.status ?? -1
    }
}
