import Testing

@testable import BlockCache

@Suite("BlockMap")
struct BlockMapTests {
    @Test("the byte count of present blocks equals the length of their ranges, a short last block included")
    func presentByteCountMatchesRanges() {
        var generator = SystemRandomNumberGenerator()
        for size: UInt64 in [0, 1, 4095, 4096, 4097, 10 * 4096 + 17, 64 * 4096] {
            for _ in 0..<20 {
                let blockCount = Int((size + 4095) / 4096)
                let bytes = (0..<(blockCount + 7) / 8).map { _ in UInt8.random(in: 0...255, using: &generator) }
                let masked = BlockMap(bytes: bytes).ranges(blockSize: 4096, size: size)
                let map = BlockMap(covering: masked, blockSize: 4096, size: size)
                #expect(map.presentByteCount(blockSize: 4096, size: size) == masked.count)
            }
        }
    }

    @Test("a block is present exactly when its bytes are all inside the ranges")
    func coveringMatchesTheBlockByBlockDefinition() {
        var generator = SystemRandomNumberGenerator()
        for size: UInt64 in [0, 1, 4095, 4096, 4097, 10 * 4096 + 17, 64 * 4096] {
            for _ in 0..<50 {
                var ranges = ByteRanges()
                for _ in 0..<Int.random(in: 0...6, using: &generator) where size > 0 {
                    let start = UInt64.random(in: 0..<size, using: &generator)
                    ranges.insert(start..<UInt64.random(in: start...size, using: &generator))
                }
                let map = BlockMap(covering: ranges, blockSize: 4096, size: size)
                for block in 0..<Int((size + 4095) / 4096) {
                    let start = UInt64(block) * 4096
                    #expect(map.isPresent(block) == ranges.contains(start..<min(start + 4096, size)))
                }
            }
        }
    }
}
