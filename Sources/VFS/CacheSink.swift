import BlockCache
import FileProviderKit
import Foundation
import Synchronization

/// The sink a provider writes fetched bytes into: straight into the cached content, waking readers
/// as their bytes land, marking progress for the fetch's watchdog, and remembering what this fetch
/// wrote so that it can be checked, or forgotten if the fetch turns out wrong.
///
/// Writes go to the cache file behind the provider: `write` queues the provider's buffer (no copy)
/// and returns, while a writer stores what is queued and wakes the readers whose bytes landed,
/// from the blocking-I/O queue (no hop back to the cooperative pool between a chunk's arrival and
/// its readers). The writer takes turns with the other fetches of the same file in the file's
/// lane, one queued batch per turn (DECISIONS 158). A chunk that arrives while the writer is idle
/// is written at its next turn; chunks that arrive while it is busy are stored together, with one
/// write for the lot. At most `maximumQueuedBytes` wait; beyond that `write` waits for the writer
/// (a provider on an event loop is told to hold back, and resumed). `flush` waits until all is
/// stored and reports the first failure.
final class CacheSink: ContentSink {
    let content: CachedContent
    let progress: ProgressMark
    let statistics: Statistics
    let download: UInt64

    /// How many received bytes may wait for the writer before the provider is held back.
    static let maximumQueuedBytes = 2 << 20
    /// Fetches of at least this many bytes have the cache file allocated ahead of their writes;
    /// below it, the extra system call costs what it saves.
    static let allocationThreshold: UInt64 = 1 << 20
    /// How far ahead of the writer the cache file is allocated, and so at most how much a fetch
    /// that fails leaves allocated beyond its bytes.
    static let allocationStep: UInt64 = 2 << 20

    private struct Piece: Sendable {
        let offset: UInt64
        let bytes: any ContiguousBytes & Sendable
        let count: UInt64
    }

    /// Guards what this fetch wrote, whether it has ended (later writes are refused), the queue,
    /// whether the writer runs, its first failure, and who waits for it.
    private struct State {
        var written = ByteRanges()
        var isClosed = false
        var queue: [Piece] = []
        var queuedBytes = 0
        var isWriting = false
        var failure: (any Error)?
        var waiters: [Waiter] = []
        /// How far the cache file is allocated for this fetch (`allocate`).
        var allocatedUpTo: UInt64 = 0
    }
    /// Called once the writer has stored everything queued, with its first failure.
    private typealias Waiter = @Sendable ((any Error)?) -> Void
    private let state = Mutex(State())

    /// Takes what the provider's answer says of the item (`describe`).
    private let described: @Sendable (Item) async -> Void

    /// A sink for a fetch of `range` of `content`; what the provider says of the item goes to
    /// `described`.
    init(
        content: CachedContent, range: Range<UInt64>, progress: ProgressMark, statistics: Statistics, download: UInt64,
        described: @escaping @Sendable (Item) async -> Void
    ) {
        self.content = content
        self.described = described
        self.progress = progress
        self.statistics = statistics
        self.download = download
        allocationEnd = UInt64(range.count) >= Self.allocationThreshold ? range.upperBound : nil
    }

    /// Where the fetch's range ends, when it is large enough to allocate ahead of its writes.
    private let allocationEnd: UInt64?

    /// The bytes this fetch has written.
    var written: ByteRanges { state.withLock { $0.written } }

    /// Ends the fetch: from now on writes are refused and make nothing present, even from a
    /// provider that ignored cancellation and is still running.
    func close() { state.withLock { $0.isClosed = true } }

    func describe(_ item: Item) async { await described(item) }

    func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws {
        try Task.checkCancellation()
        if try !enqueue(bytes, at: offset, waiter: nil) { try await flush() }
    }

    func write(
        _ bytes: some ContiguousBytes & Sendable, at offset: UInt64,
        resume: @escaping @Sendable ((any Error)?) -> Void
    ) throws -> Bool {
        try enqueue(bytes, at: offset, waiter: resume)
    }

    /// Queues `bytes` for the writer, starting it when it is idle. Returns false when more than
    /// `maximumQueuedBytes` wait: the caller is to wait for the writer, and `waiter`, if given, is
    /// called once it has stored them.
    private func enqueue(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64, waiter: Waiter?) throws -> Bool {
        let count = bytes.withUnsafeBytes { UInt64($0.count) }
        progress.touch(bytes: count)
        let (startWriter, mustWait) = try state.withLock { state throws -> (Bool, Bool) in
            if let failure = state.failure { throw failure }
            if state.isClosed { throw CancellationError() }
            state.queue.append(Piece(offset: offset, bytes: bytes, count: count))
            state.queuedBytes += Int(count)
            let start = !state.isWriting
            state.isWriting = true
            let mustWait = state.queuedBytes > Self.maximumQueuedBytes
            if mustWait, let waiter { state.waiters.append(waiter) }
            return (start, mustWait)
        }
        if startWriter { content.writes.submit { self.writeTurn() } }
        return !mustWait
    }

    /// Waits until everything queued is stored; throws the writer's first failure.
    func flush() async throws {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                if !state.isWriting { return true }
                state.waiters.append { _ in continuation.resume() }
                return false
            }
            if idle { continuation.resume() }
        }
        if let failure = state.withLock({ $0.failure }) { throw failure }
    }

    /// One turn of the writer, in the file's lane: stores what is queued, run by run of adjacent
    /// pieces, and queues its next turn behind the other fetches' until a turn finds nothing.
    private func writeTurn() {
        guard let batch = nextBatch() else { return }
        do {
            for run in Self.adjacentRuns(batch) { try store(run) }
        } catch {
            state.withLock { state in if state.failure == nil { state.failure = error } }
        }
        content.writes.submit { self.writeTurn() }
    }

    /// Takes the queue; or, when it is empty (or the writer failed), stops the writer and wakes
    /// those waiting in `flush`, in one step, so that none is woken while bytes still wait.
    private func nextBatch() -> [Piece]? {
        let (batch, waiters, failure) = state.withLock { state -> ([Piece]?, [Waiter], (any Error)?) in
            let batch = state.failure == nil && !state.queue.isEmpty ? state.queue : nil
            state.queue = []
            state.queuedBytes = 0
            if batch != nil { return (batch, [], nil) }
            state.isWriting = false
            defer { state.waiters = [] }
            return (nil, state.waiters, state.failure)
        }
        for waiter in waiters { waiter(failure) }
        return batch
    }

    /// Stores adjacent pieces with one write to the cached content.
    private func store(_ run: [Piece]) throws {
        let offset = run[0].offset
        let count = run.reduce(0) { $0 + $1.count }
        allocate(offset..<offset + count)
        try content.writeBlocking(run.map(\.bytes), at: offset) {
            state.withLock { state in
                guard !state.isClosed else { return false }
                state.written.insert(offset..<offset + count)
                return true
            }
        }
        statistics.fetchProgressed(download, bytes: count)
    }

    /// Allocates the cache file for a write of `range` and a step beyond, within the fetch's range,
    /// where this fetch has not yet (on the writer's thread): the writes land in allocated blocks
    /// (DECISIONS 132), and a fetch that fails leaves at most a step allocated that the cache does
    /// not count, which the next fetch of the range fills.
    private func allocate(_ range: Range<UInt64>) {
        guard let allocationEnd else { return }
        let start = max(state.withLock { $0.allocatedUpTo }, range.lowerBound)
        let upTo = min(range.upperBound + Self.allocationStep, allocationEnd)
        guard range.upperBound > start, upTo > start else { return }
        content.allocateBlocking(start..<upTo)
        state.withLock { $0.allocatedUpTo = upTo }
    }

    /// `pieces` cut where one does not start where the previous one ended.
    private static func adjacentRuns(_ pieces: [Piece]) -> [[Piece]] {
        var runs: [[Piece]] = []
        for piece in pieces {
            if let last = runs.last?.last, last.offset + last.count == piece.offset {
                runs[runs.count - 1].append(piece)
            } else {
                runs.append([piece])
            }
        }
        return runs
    }
}
