import Foundation
import NIOCore
import Testing

@testable import WebDAVProvider

/// A file of at most one chunk is read whole for its upload; a larger one is streamed.
@Suite struct FileChunksTests {
    private func file(of length: Int) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("chunks-\(UUID().uuidString)")
        try Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: url)
        return url
    }

    @Test func aFileOfOneChunkIsReadWholeAndALargerOneIsNot() throws {
        for length in [0, 4096, FileChunks.size] {
            let url = try file(of: length)
            defer { try? FileManager.default.removeItem(at: url) }
            guard case .bytes(let bytes) = try FileChunks.whole(url) else {
                Issue.record("a file of \(length) bytes was not read whole")
                continue
            }
            #expect(Data(bytes.readableBytesView) == (try Data(contentsOf: url)))
        }
        let url = try file(of: FileChunks.size + 1)
        defer { try? FileManager.default.removeItem(at: url) }
        guard case .larger(let size) = try FileChunks.whole(url) else {
            Issue.record("a file larger than a chunk was read whole")
            return
        }
        #expect(size == Int64(FileChunks.size + 1))
    }

    @Test func aMissingFileIsAnError() {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("chunks-missing-\(UUID().uuidString)")
        #expect(throws: POSIXError.self) { _ = try FileChunks.whole(url) }
    }
}
