/// Which aligned blocks of a file are present, one bit per block (least significant bit of byte 0
/// first): the form in which the store keeps presence durably.
struct BlockMap: Hashable {
    private(set) var bytes: [UInt8]

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// The blocks wholly inside `ranges`; the last block counts when it reaches the end of the file.
    /// Walks the ranges, not every block: a commit of one random miss in a large file costs the
    /// blocks that landed, not a search per block of the file.
    init(covering ranges: ByteRanges, blockSize: UInt64, size: UInt64) {
        let blockCount = Int((size + blockSize - 1) / blockSize)
        var bytes = [UInt8](repeating: 0, count: (blockCount + 7) / 8)
        for range in ranges.ranges {
            var block = Int((range.lowerBound + blockSize - 1) / blockSize)
            while block < blockCount, min(UInt64(block + 1) * blockSize, size) <= range.upperBound {
                bytes[block / 8] |= 1 << (block % 8)
                block += 1
            }
        }
        self.bytes = bytes
    }

    func isPresent(_ block: Int) -> Bool {
        block / 8 < bytes.count && bytes[block / 8] & (1 << (block % 8)) != 0
    }

    /// Bytes of the present blocks in a file of `size` bytes (the last block may be short), counted
    /// without building ranges: the cache sums this at every commit.
    func presentByteCount(blockSize: UInt64, size: UInt64) -> UInt64 {
        let blockCount = Int((size + blockSize - 1) / blockSize)
        guard blockCount > 0 else { return 0 }
        let present = bytes.prefix((blockCount + 7) / 8).reduce(0) { $0 + UInt64($1.nonzeroBitCount) }
        let last = blockCount - 1
        let shortfall = UInt64(last + 1) * blockSize - size
        return present * blockSize - (isPresent(last) ? shortfall : 0)
    }

    /// The byte ranges of the present blocks in a file of `size` bytes, built run by run (whole
    /// bytes of the map at a time where they are all present or all missing): every commit of a
    /// streaming read turns the map back into ranges.
    func ranges(blockSize: UInt64, size: UInt64) -> ByteRanges {
        var result = ByteRanges()
        let blockCount = Int((size + blockSize - 1) / blockSize)
        var block = 0
        var runStart: Int?
        while block < blockCount {
            let byte = block / 8 < bytes.count ? bytes[block / 8] : 0
            let wholeByte = block % 8 == 0 && block + 8 <= blockCount && (byte == 0 || byte == 0xFF)
            let present = wholeByte ? byte == 0xFF : isPresent(block)
            if present, runStart == nil { runStart = block }
            if !present, let start = runStart {
                result.insert(UInt64(start) * blockSize..<UInt64(block) * blockSize)
                runStart = nil
            }
            block += wholeByte ? 8 : 1
        }
        if let start = runStart { result.insert(UInt64(start) * blockSize..<size) }
        return result
    }
}
