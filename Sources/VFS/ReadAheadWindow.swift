/// Read-ahead for one open handle, as a value: each read reports where it was, and the window
/// answers which bytes to fetch ahead.
///
/// Sequential reading (a read that starts where the previous one ended, give or take the kernel's
/// own read-ahead reordering) doubles the window from its first size up to `maximum`; any other
/// read resets it, so random access fetches only the blocks it touches.
///
/// The window is refilled only once at least half of it is missing, so that a steady reader asks
/// for large runs (half a window at a time, which the fetcher splits into a few large requests)
/// instead of one block per read.
struct ReadAheadWindow: Sendable {
    let blockSize: UInt64
    let maximum: UInt64
    private(set) var window: UInt64 = 0
    private var nextExpected: UInt64?
    /// How far ahead has already been asked for, so the same range is not asked twice.
    private var issuedUpTo: UInt64 = 0

    /// The kernel's read-ahead window for the mount (FileSystem.initialize): it sends a window as
    /// several reads, with the next window's possibly in flight too, answered in any order.
    static let kernelReadAhead: UInt64 = 1 << 20

    /// A sequential reader's first window, and what rides on its first miss (ContentFetcher): one
    /// block, but never less than the kernel's read-ahead window, so that small blocks make random
    /// misses small without making a streaming reader start slowly.
    static func firstWindow(blockSize: UInt64) -> UInt64 { max(blockSize, kernelReadAhead) }

    init(blockSize: UInt64, maximum: UInt64) {
        self.blockSize = blockSize
        self.maximum = max(maximum, blockSize)
    }

    /// Records a read of `range` in a file of `size` bytes; returns the range to fetch ahead
    /// (empty when none).
    mutating func record(_ range: Range<UInt64>, size: UInt64) -> Range<UInt64> {
        let tolerance = 2 * Self.firstWindow(blockSize: blockSize)
        let sequential =
            nextExpected.map { range.lowerBound + tolerance >= $0 && range.lowerBound <= $0 + tolerance }
            ?? (range.lowerBound == 0)
        nextExpected = range.upperBound
        guard sequential else {
            window = 0
            issuedUpTo = 0
            return range.upperBound..<range.upperBound
        }
        window = window == 0 ? Self.firstWindow(blockSize: blockSize) : min(window * 2, maximum)
        let start = max(range.upperBound, issuedUpTo)
        let end = min(range.upperBound + window, size)
        guard start < end, end == size || end - start >= window / 2 else { return start..<start }
        issuedUpTo = end
        return start..<end
    }
}
