import Testing

@testable import VFS

@Suite("ReadAheadWindow")
struct ReadAheadWindowTests {
    private let mebibyte: UInt64 = 1 << 20

    @Test("with small blocks, the window starts at the kernel's read size and outlives reads out of order")
    func reorderedKernelReadsKeepTheWindowGrowing() {
        var window = ReadAheadWindow(
            blockSize: 64 << 10, maximum: 64 * mebibyte, maximumRequest: 8 * mebibyte, parallelism: 8)
        var sizes: [UInt64] = []
        for start: UInt64 in [0, 2, 1, 3, 5, 4, 6] {
            _ = window.record(start * mebibyte..<(start + 1) * mebibyte, size: 1 << 30)
            sizes.append(window.window)
        }
        // Four times as large per read up to a request's size, twice from there, up to the maximum.
        #expect(sizes == [1, 4, 16, 32, 64, 64, 64].map { $0 * mebibyte })
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
        for start in UInt64(0)..<64 {
            if let refill = window.record(start * mebibyte..<(start + 1) * mebibyte, size: 1 << 30) {
                refills.append(refill)
            }
        }
        #expect(window.window == 128 * mebibyte)
        let steady = refills.drop { $0.range.upperBound < 64 * mebibyte + 128 * mebibyte - 16 * mebibyte }
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
        for start in UInt64(0)..<8 {
            last = window.record(start * mebibyte..<(start + 1) * mebibyte, size: 48 * mebibyte) ?? last
        }
        // The fifth read's window reaches the end, with 43 MiB left: 5.25 MiB (whole blocks) for
        // each of 8 slots.
        #expect(last?.range.upperBound == 48 * mebibyte)
        #expect(last?.requestSize == 21 * mebibyte / 4)

        var deep = ReadAheadWindow(
            blockSize: 256 << 10, maximum: 128 * mebibyte, maximumRequest: 16 * mebibyte, parallelism: 32)
        #expect(deep.record(0..<mebibyte, size: 32 * mebibyte)?.requestSize == ReadAheadWindow.minimumRequest)
    }
}
