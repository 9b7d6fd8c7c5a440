import Testing

@testable import VFS

@Suite("ReadAheadWindow")
struct ReadAheadWindowTests {
    private let mebibyte: UInt64 = 1 << 20

    /// The window after each of `reads` (in MiB) of a 1 GiB file, with 64 KiB blocks.
    private func windowSizes(after reads: [Range<UInt64>]) -> [UInt64] {
        var window = ReadAheadWindow(
            blockSize: 64 << 10, maximum: 64 * mebibyte, maximumRequest: 8 * mebibyte, parallelism: 8)
        return reads.map { read in
            _ = window.record(read.lowerBound * mebibyte..<read.upperBound * mebibyte, size: 1 << 30)
            return window.window / mebibyte
        }
    }

    @Test("with small blocks, the window starts at the kernel's read size and outlives reads out of order")
    func reorderedKernelReadsKeepTheWindowGrowing() {
        // Four times as large per read, but never more than the run has read (the furthest byte).
        let sizes = windowSizes(after: [0, 2, 1, 3, 5, 4, 6].map { $0..<$0 + 1 })
        #expect(sizes == [1, 3, 3, 4, 6, 6, 7])
    }

    @Test("the window grows with what the reader used: four times per read, then twice, up to the maximum")
    func theWindowGrowsWithWhatWasRead() {
        let sizes = windowSizes(after: [0..<1, 1..<2, 2..<6, 6..<22, 22..<54, 54..<118, 118..<182])
        #expect(sizes == [1, 2, 6, 22, 44, 64, 64])
    }

    @Test("a reader that stops early has had at most as much again fetched ahead, plus the first window")
    func anEarlyStopCostsLittle() {
        // `file` reads 7 MiB of a 300 MiB file in 1 MiB reads (direct I/O); `head -c 64K` one read.
        for reads: UInt64 in [1, 7, 20] {
            var window = ReadAheadWindow(
                blockSize: 64 << 10, maximum: 128 * mebibyte, maximumRequest: 16 * mebibyte, parallelism: 8)
            var fetchedUpTo: UInt64 = 0
            for read in 0..<reads {
                let refill = window.record(read * mebibyte..<(read + 1) * mebibyte, size: 300 * mebibyte)
                fetchedUpTo = max(fetchedUpTo, refill?.range.upperBound ?? 0, (read + 1) * mebibyte)
            }
            #expect(fetchedUpTo <= 2 * reads * mebibyte + ReadAheadWindow.firstWindow(blockSize: 64 << 10))
        }
    }

    @Test("a read far from the last one resets the window")
    func aJumpResetsTheWindow() {
        var window = ReadAheadWindow(
            blockSize: 64 << 10, maximum: 64 * mebibyte, maximumRequest: 8 * mebibyte, parallelism: 8)
        _ = window.record(0..<mebibyte, size: 1 << 30)
        _ = window.record(mebibyte..<2 * mebibyte, size: 1 << 30)
        let ahead = window.record(100 * mebibyte..<100 * mebibyte + 4096, size: 1 << 30)
        #expect(window.window == 0)
        #expect(ahead == nil)
    }

    @Test("a steady reader tops the full window up by one large request at a time")
    func aFullWindowIsToppedUpByRequests() {
        var window = ReadAheadWindow(
            blockSize: 256 << 10, maximum: 128 * mebibyte, maximumRequest: 16 * mebibyte, parallelism: 8)
        var refills: [ReadAheadWindow.Refill] = []
        for start in UInt64(0)..<256 {
            if let refill = window.record(start * mebibyte..<(start + 1) * mebibyte, size: 1 << 30) {
                refills.append(refill)
            }
        }
        #expect(window.window == 128 * mebibyte)
        let steady = refills.drop { $0.range.upperBound < 256 * mebibyte + 128 * mebibyte - 16 * mebibyte }
        #expect(!steady.isEmpty)
        for refill in steady {
            #expect(refill.requestSize == 16 * mebibyte)
            #expect(refill.range.count == 16 * mebibyte)
        }
    }

    @Test("a short file's rest is spread over the pipeline, in requests of at least 4 MiB")
    func aShortFilesRestIsSpreadOverThePipeline() {
        var window = ReadAheadWindow(
            blockSize: 256 << 10, maximum: 128 * mebibyte, maximumRequest: 16 * mebibyte, parallelism: 8)
        var last: ReadAheadWindow.Refill?
        for start in UInt64(0)..<48 {
            last = window.record(start * mebibyte..<(start + 1) * mebibyte, size: 90 * mebibyte) ?? last
        }
        // The 45th read's window (45 MiB, what was read) reaches the end, with 45 MiB left:
        // 5.625 MiB (whole blocks) for each of 8 slots.
        #expect(last?.range.upperBound == 90 * mebibyte)
        #expect(last?.requestSize == 45 * mebibyte / 8 / (256 << 10) * (256 << 10))

        var deep = ReadAheadWindow(
            blockSize: 256 << 10, maximum: 128 * mebibyte, maximumRequest: 16 * mebibyte, parallelism: 32)
        #expect(deep.record(0..<mebibyte, size: 32 * mebibyte)?.requestSize == ReadAheadWindow.minimumRequest)
    }
}
