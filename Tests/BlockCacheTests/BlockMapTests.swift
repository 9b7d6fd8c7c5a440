import Testing

@testable import BlockCache

@Suite("BlockMap")
struct BlockMapTests {
    @Test("a map read back as ranges and made again is the same map, its byte count their length")
    func presentByteCountMatchesRanges() {
        var generator = SystemRandomNumberGenerator()
        for size: UInt64 in [0, 1, 4095, 4096, 4097, 10 * 4096 + 17, 64 * 4096] {
            for _ in 0..<20 {
                let blockCount = Int((size + 4095) / 4096)
                // Whole bytes present or missing as often as mixed ones.
                let bytes = (0..<(blockCount + 7) / 8).map { _ in
                    [0, 0xFF, UInt8.random(in: 0...255, using: &generator)].randomElement(using: &generator)!
                }
                let masked = BlockMap(bytes: bytes).ranges(blockSize: 4096, size: size)
                let map = BlockMap(covering: masked, blockSize: 4096, size: size)
                #expect(map.presentByteCount(blockSize: 4096, size: size) == masked.count)
                for block in 0..<blockCount { #expect(map.isPresent(block) == BlockMap(bytes: bytes).isPresent(block)) }
            }
        }
    }

    @Test("a map recorded before any block landed has no ranges")
    func emptyMapHasNoRanges() {
        #expect(BlockMap(bytes: []).ranges(blockSize: 4096, size: 100 * 4096).isEmpty)
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
