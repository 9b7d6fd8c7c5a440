import Foundation
import SystemPackage
import Testing

@testable import BlockCache

@Suite("Gathered writes")
struct GatherWriteTests {
    @Test("pieces land one after the other from the offset, empty ones and more than one call's worth included")
    func piecesLandInOrder() throws {
        let path = FilePath(FileManager.default.temporaryDirectory.path).appending("gather-\(UUID().uuidString)")
        let descriptor = try FileDescriptor.open(
            path, .readWrite, options: [.create, .truncate], permissions: [.ownerReadWrite])
        defer {
            try? descriptor.close()
            try? FileManager.default.removeItem(atPath: path.string)
        }
        // 1 500 pieces (more than one pwritev takes) of 1 to 7 bytes, with empty ones among them.
        let pieces: [[UInt8]] = (0..<1500).map { index in
            index % 100 == 0 ? [] : (0..<(index % 7 + 1)).map { UInt8(truncatingIfNeeded: index &+ $0) }
        }
        try descriptor.writeAll(pieces, toAbsoluteOffset: 10)
        let expected = [UInt8](repeating: 0, count: 10) + pieces.flatMap { $0 }
        var read = [UInt8](repeating: 0xFF, count: expected.count + 1)
        let count = try read.withUnsafeMutableBytes { try descriptor.read(fromAbsoluteOffset: 0, into: $0) }
        #expect(count == expected.count)
        #expect(Array(read.prefix(count)) == expected)
    }
}
