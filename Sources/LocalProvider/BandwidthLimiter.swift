import Synchronization

/// Caps the bytes per second of all content fetches of one provider together.
///
/// Each chunk reserves the next free slot of transfer time on a single shared timeline and sleeps
/// until its slot ends, so concurrent fetches split the rate between them instead of each getting
/// all of it. The sleep is cancellable, so a cancelled fetch stops at once.
final class BandwidthLimiter: Sendable {
    let bytesPerSecond: UInt64
    private let endOfReservations = Mutex(ContinuousClock.now)

    init(bytesPerSecond: UInt64) {
        precondition(bytesPerSecond > 0, "a bandwidth limit must be positive")
        self.bytesPerSecond = bytesPerSecond
    }

    /// A chunk size that keeps the transfer smooth: about an eighth of a second's worth of bytes,
    /// between 4 KiB and `largest`.
    func chunkSize(atMost largest: Int) -> Int {
        Int(min(max(bytesPerSecond / 8, 4096), UInt64(largest)))
    }

    /// Waits until `byteCount` more bytes may be transferred.
    func acquire(_ byteCount: Int) async throws {
        let transfer = Duration.nanoseconds(Int64(Double(byteCount) / Double(bytesPerSecond) * 1e9))
        let deadline = endOfReservations.withLock { end in
            end = max(end, .now) + transfer
            return end
        }
        try await Task.sleep(until: deadline, clock: .continuous)
    }
}
