import Foundation
import SystemPackage
import Testing

@testable import VFS

#if canImport(Glibc)
    import Glibc
#endif

@Suite("NamelessFiles")
struct NamelessFilesTests {
    @Test("the first take makes a file at once and fills the stock behind it; later takes use the stock")
    func stockFillsFromTheFirstTake() async throws {
        let folder = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder.string) }
        let files = NamelessFiles(in: folder, stock: 4)
        defer { files.close() }
        #expect(files.readyCount == 0)

        let first = try #require(await files.take())
        defer { try? first.close() }
        var status = stat()
        #expect(fstat(first.rawValue, &status) == 0)
        #expect(status.st_nlink == 0)
        try await Self.waitUntil(files, holds: 4)

        // Down to half: the second take starts a refill. A third take could find the refill
        // already done and leave three, which is above half and starts none, so the test stops
        // at two takes.
        var taken = [first]
        for _ in 0..<2 { taken.append(try #require(await files.take())) }
        defer { for file in taken.dropFirst() { try? file.close() } }
        #expect(Set(taken.map(\.rawValue)).count == 3)
        try await Self.waitUntil(files, holds: 4)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.string).isEmpty)
    }

    @Test("close shuts the files made ahead and makes no more")
    func closeEndsTheStock() async throws {
        let folder = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder.string) }
        let files = NamelessFiles(in: folder, stock: 2)
        let first = try #require(await files.take())
        try? first.close()
        try await Self.waitUntil(files, holds: 2)
        #expect(Self.descriptors(in: folder) == 2)

        files.close()
        #expect(files.readyCount == 0)
        #expect(Self.descriptors(in: folder) == 0)
        #expect(await files.take() == nil)
    }

    private static func makeFolder() throws -> FilePath {
        let folder = FilePath(NSTemporaryDirectory()).appending("nameless-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
        return folder
    }

    /// The process's descriptors of files in `folder`, named or not.
    private static func descriptors(in folder: FilePath) -> Int {
        let numbers = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return numbers.count { number in
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(number)")
            return target?.hasPrefix(folder.string + "/") ?? false
        }
    }

    /// Waits until `files` holds `count` files made ahead, generously: the suite shares the
    /// machine with every other suite of the run.
    private static func waitUntil(_ files: NamelessFiles, holds count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while files.readyCount != count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(files.readyCount == count)
    }
}
