/// Read-ahead for one open handle, as a value: each read reports where it was, and the window
/// answers which bytes to fetch ahead, and in requests of what size.
///
/// Sequential reading (a read that starts where the previous one ended, give or take the kernel's
/// own read-ahead reordering) grows the window from its first size up to `maximum`, four times
/// per read while it is smaller than one request and twice from there (DECISIONS 159), but never
/// beyond what the run has read so far (DECISIONS 190): a reader that stops early has had at most
/// as much again fetched ahead, plus the first window. Any other read resets it, so random access
/// fetches only the blocks it touches.
///
/// Requests are as large as `maximumRequest`, but no larger than the file's rest spread over the
/// pipeline (`parallelism`), so that a short file's rest is fetched by all slots at once. The
/// window is topped up whenever a whole request's worth (or half the window) is missing: a steady
/// reader then keeps the pipeline full of large requests instead of sending a burst every half
/// window (DECISIONS 100).
struct ReadAheadWindow: Sendable {
    let blockSize: UInt64
    let maximum: UInt64
    let maximumRequest: UInt64
    /// How many fetches run at once (the pipeline depth).
    let parallelism: UInt64
    private(set) var window: UInt64 = 0
    private var nextExpected: UInt64?
    /// Where the current sequential run began, and the furthest it has read: the window never
    /// exceeds the difference (what the reader has used), so fetching ahead stays proportional.
    private var runStart: UInt64 = 0
    private var readUpTo: UInt64 = 0
    /// How far ahead has already been asked for, so the same range is not asked twice.
    private var issuedUpTo: UInt64 = 0

    /// What to fetch ahead: `range`, cut into aligned requests of up to `requestSize`.
    struct Refill: Equatable, Sendable {
        let range: Range<UInt64>
        let requestSize: UInt64
    }

    /// The kernel's read-ahead window for the mount (FileSystem.initialize): it sends a window as
    /// several reads, with the next window's possibly in flight too, answered in any order.
    static let kernelReadAhead: UInt64 = 1 << 20

    /// A sequential reader's first window, and what rides on its first miss (ContentFetcher): one
    /// block, but never less than the kernel's read-ahead window, so that small blocks make random
    /// misses small without making a streaming reader start slowly.
    static func firstWindow(blockSize: UInt64) -> UInt64 { max(blockSize, kernelReadAhead) }

    /// The smallest request a refill is cut into: below this a request's round trip and fixed
    /// costs outweigh what spreading a short file's rest over more slots gains.
    static let minimumRequest: UInt64 = 4 << 20

    init(blockSize: UInt64, maximum: UInt64, maximumRequest: UInt64, parallelism: Int) {
        self.blockSize = blockSize
        self.maximum = max(maximum, blockSize)
        self.maximumRequest = max(maximumRequest / blockSize, 1) * blockSize
        self.parallelism = UInt64(max(parallelism, 1))
    }

    /// Records a read of `range` in a file of `size` bytes; returns what to fetch ahead, if
    /// anything.
    mutating func record(_ range: Range<UInt64>, size: UInt64) -> Refill? {
        let firstWindow = Self.firstWindow(blockSize: blockSize)
        let tolerance = 2 * firstWindow
        let sequential =
            nextExpected.map { range.lowerBound + tolerance >= $0 && range.lowerBound <= $0 + tolerance }
            ?? (range.lowerBound == 0)
        nextExpected = range.upperBound
        guard sequential else {
            window = 0
            issuedUpTo = 0
            runStart = range.lowerBound
            readUpTo = range.upperBound
            return nil
        }
        readUpTo = max(readUpTo, range.upperBound)
        let grown = window == 0 ? firstWindow : min(window * (window < maximumRequest ? 4 : 2), maximum)
        window = min(grown, max(firstWindow, readUpTo - runStart))
        let start = max(range.upperBound, issuedUpTo)
        let end = min(range.upperBound + window, size)
        guard start < end else { return nil }
        // What the file still has, spread over the slots: all of a short file's rest at once.
        let share = (size - range.upperBound) / parallelism / blockSize * blockSize
        let requestSize = min(max(share, Self.minimumRequest), maximumRequest)
        guard end == size || end - start >= min(window / 2, requestSize) else { return nil }
        issuedUpTo = end
        return Refill(range: start..<end, requestSize: requestSize)
    }
}
