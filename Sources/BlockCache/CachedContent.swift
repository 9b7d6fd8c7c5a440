import CFallocate
import FileProviderKit
import Foundation
import MetadataStore
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// The cached bytes of one content version of one item: a sparse file the size of the content,
/// the byte ranges that have landed in it, the ranges fetches have claimed, and the readers waiting.
///
/// A reader calls `waitUntilPresent`: under one lock it finds which parts of its range are missing,
/// joins the claims already covering them and claims the rest (as block-aligned runs, or the whole
/// file for providers that cannot fetch ranges), hands its new claims to the caller to fetch, and
/// waits. It is woken as soon as its bytes land (`write`), or with the error of a claim it depends
/// on (`finish`). Because claiming and waiting happen under the same lock, a reader can never wait
/// on a fetch that has already ended.
///
/// `commit` records the fully landed blocks in the store, in the current durability epoch: only
/// those survive a restart, and only once durable a crash of the machine, so bytes that were not
/// fetched are never served.
public final class CachedContent: Sendable {
    /// The item's identifier now: a move on a remote whose identifiers are places changes it
    /// (`BlockCache.followIdentifiers`), and fetches ask for the bytes under this one.
    public var identifier: ItemIdentifier { currentIdentifier.withLock { $0 } }
    private let currentIdentifier: Mutex<ItemIdentifier>
    public let contentVersion: [UInt8]
    public let size: UInt64
    public let blockSize: UInt64
    public let fileNumber: Int64
    /// The open cache file; valid for this object's lifetime.
    public let fileDescriptor: FileDescriptor
    /// Where fetches' writes into the cache file take turns, one at a time (DECISIONS 158).
    public let writes = SerialLane()
    private let store: MetadataStore
    private let epochs: DurabilityEpochs
    /// The writing of this file's row in the store, when it is new (BlockCache.beginContent).
    private let rowWritten: Task<Void, any Error>?

    private struct Waiter {
        let range: Range<UInt64>
        var pendingClaims: Set<UInt64>
        let continuation: CheckedContinuation<Void, any Error>
    }

    /// Guards the landed and committed ranges, the claims, the waiters and the commit flags.
    private struct State {
        var landed = ByteRanges()
        var committed: ByteRanges
        /// The block map the store has: only what differs from it is written at a commit.
        var recordedMap: [UInt8]
        var claims: [UInt64: Range<UInt64>] = [:]
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
        var isCommitting = false
        var needsCommit = false
        /// Claims that failed lately: readers of these ranges get the same error at once for a
        /// moment, so the kernel's retry of a failed read-ahead does not wait out the bound again.
        var recentFailures: [(range: Range<UInt64>, error: any Error, time: ContinuousClock.Instant)] = []

        mutating func makeID() -> UInt64 {
            nextID += 1
            return nextID
        }
    }
    private let state: Mutex<State>

    /// How long a failed claim's error answers new readers of its range.
    static let failureMemory: Duration = .seconds(1)

    init(
        record: ContentRecord, fileDescriptor: FileDescriptor, store: MetadataStore, epochs: DurabilityEpochs,
        rowWritten: Task<Void, any Error>?
    ) {
        self.currentIdentifier = Mutex(record.identifier)
        self.contentVersion = record.contentVersion
        self.size = record.size
        self.blockSize = record.blockSize
        self.fileNumber = record.fileNumber
        self.fileDescriptor = fileDescriptor
        self.store = store
        self.epochs = epochs
        self.rowWritten = rowWritten
        let present = BlockMap(bytes: record.presentBlocks).ranges(blockSize: record.blockSize, size: record.size)
        self.state = Mutex(State(landed: present, committed: present, recordedMap: record.presentBlocks))
    }

    deinit { try? fileDescriptor.close() }

    /// Takes the identifier the remote gave the item.
    func follow(_ identifier: ItemIdentifier) {
        currentIdentifier.withLock { $0 = identifier }
    }

    /// True when every byte of `range` (clipped to the content) is here.
    public func isPresent(_ range: Range<UInt64>) -> Bool {
        let clipped = range.clamped(to: 0..<size)
        return state.withLock { $0.landed.contains(clipped) }
    }

    /// Bytes of the content that are here.
    public var presentBytes: UInt64 { state.withLock { $0.landed.count } }

    /// True when the whole content is here.
    public var isComplete: Bool { isPresent(0..<size) }

    /// How a reader's missing bytes are fetched.
    public enum FetchGranularity: Sendable {
        /// Aligned blocks of this many bytes; adjacent missing blocks form one claim.
        case blocks(UInt64)
        /// The whole file in one claim (providers without partial fetches).
        case wholeFile
    }

    /// Claims the parts of `range` that are neither here nor claimed; returns the new claims, for
    /// the caller to fetch (read-ahead).
    public func claimMissing(in range: Range<UInt64>, granularity: FetchGranularity) -> [ContentClaim] {
        state.withLock { state in
            claim(range.clamped(to: 0..<size), granularity: granularity, extendingInto: nil, in: &state).new
        }
    }

    /// Returns once every byte of `range` (clipped to the content) is here. Missing parts not yet
    /// claimed are claimed and passed to `start` (called before waiting, outside the lock); the
    /// claims this reader depends on are passed to `joined`. Throws the error of a claim that fails,
    /// or CancellationError when the calling task is cancelled.
    ///
    /// The last new claim, when `following` goes on from where it ends, also takes the missing,
    /// unclaimed blocks of `following` after it: one request brings the read's bytes first and then
    /// those (ARCHITECTURE §3: the read's blocks merged with the read-ahead window).
    public func waitUntilPresent(
        _ range: Range<UInt64>, granularity: FetchGranularity, extendingInto following: Range<UInt64>? = nil,
        start: ([ContentClaim]) -> Void, joined: ([ContentClaim]) -> Void
    ) async throws {
        let wanted = range.clamped(to: 0..<size)
        let waiterID = state.withLock { $0.makeID() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let claimed = state.withLock {
                    state -> Result<(new: [ContentClaim], depended: [ContentClaim])?, any Error> in
                    if state.landed.contains(wanted) { return .success(nil) }
                    // Cancelled before this waiter was registered: `onCancel` found nothing to end.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    let now = ContinuousClock.now
                    state.recentFailures.removeAll { now - $0.time > Self.failureMemory }
                    if let failure = state.recentFailures.first(where: { $0.range.overlaps(wanted) }) {
                        return .failure(failure.error)
                    }
                    let claimed = claim(
                        wanted, granularity: granularity, extendingInto: following?.clamped(to: 0..<size), in: &state)
                    let depended = claimed.new + claimed.joined
                    state.waiters[waiterID] = Waiter(
                        range: wanted, pendingClaims: Set(depended.map(\.id)), continuation: continuation)
                    return .success((claimed.new, depended))
                }
                let outcome: (new: [ContentClaim], depended: [ContentClaim])?
                do {
                    outcome = try claimed.get()
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                guard let claimed = outcome else {
                    continuation.resume()
                    return
                }
                if !claimed.new.isEmpty { start(claimed.new) }
                joined(claimed.depended)
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: waiterID) }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Under the lock: the claims covering the missing parts of `range`, existing and new; the
    /// last new one extended into `following` as `waitUntilPresent` says.
    private func claim(
        _ range: Range<UInt64>, granularity: FetchGranularity, extendingInto following: Range<UInt64>?,
        in state: inout State
    ) -> (new: [ContentClaim], joined: [ContentClaim]) {
        guard !range.isEmpty, !state.landed.contains(range) else { return ([], []) }
        switch granularity {
        case .wholeFile:
            if !state.claims.isEmpty {
                return ([], state.claims.map { ContentClaim(id: $0.key, range: $0.value) })
            }
            let claim = ContentClaim(id: state.makeID(), range: 0..<size)
            state.claims[claim.id] = claim.range
            return ([claim], [])
        case .blocks(let alignment):
            var joined: [UInt64: ContentClaim] = [:]
            var runs: [Range<UInt64>] = []
            var block = range.lowerBound / alignment * alignment
            while block < range.upperBound {
                let blockRange = block..<min(block + alignment, size)
                block += alignment
                if state.landed.contains(blockRange) { continue }
                let covering = state.claims.filter { $0.value.overlaps(blockRange) }
                if !covering.isEmpty {
                    for (id, claimed) in covering { joined[id] = ContentClaim(id: id, range: claimed) }
                    continue
                }
                if let last = runs.last, last.upperBound == blockRange.lowerBound {
                    runs[runs.count - 1] = last.lowerBound..<blockRange.upperBound
                } else {
                    runs.append(blockRange)
                }
            }
            if let following, let last = runs.last, following.lowerBound <= last.upperBound {
                var end = last.upperBound
                while end < following.upperBound {
                    let blockRange = end..<min(end + alignment, size)
                    let isTaken = state.claims.values.contains { $0.overlaps(blockRange) }
                    guard !isTaken, !state.landed.overlaps(blockRange) else { break }
                    end = blockRange.upperBound
                }
                runs[runs.count - 1] = last.lowerBound..<end
            }
            let new = runs.map { ContentClaim(id: state.makeID(), range: $0) }
            for claim in new { state.claims[claim.id] = claim.range }
            return (new, Array(joined.values))
        }
    }

    /// True when a reader waits on `claim`: its fetch must go on for it.
    public func isWaitedOn(_ claim: ContentClaim) -> Bool {
        state.withLock { state in state.waiters.values.contains { $0.pendingClaims.contains(claim.id) } }
    }

    /// Stores fetched bytes at `offset` and wakes the readers they satisfy, from the blocking-I/O
    /// queue. `accept` is asked under the lock, after the bytes are in the file, whether they
    /// still count: a fetch that has been abandoned must not make bytes present.
    public func write(
        _ bytes: some ContiguousBytes & Sendable, at offset: UInt64, accept: @escaping @Sendable () -> Bool = { true }
    ) async throws {
        try await BlockingIO.run { try self.writeBlocking([bytes], at: offset, accept: accept) }
    }

    /// Stores `pieces`, one after the other from `offset`, as `write(_:at:accept:)` does, but on
    /// the calling thread, which must not be a cooperative one (it waits for the disk): for a
    /// writer that already runs on the blocking-I/O queue, so that the bytes land and their readers
    /// wake without a hop back to the cooperative pool in between.
    public func writeBlocking(
        _ pieces: [any ContiguousBytes & Sendable], at offset: UInt64, accept: () -> Bool = { true }
    ) throws {
        let count = pieces.reduce(0) { total, piece in total + piece.withUnsafeBytes { $0.count } }
        guard offset + UInt64(count) <= size else {
            throw ProviderError.cannotSynchronize(
                reason: "provider wrote \(count) bytes at \(offset), past the end of a \(size)-byte file")
        }
        try fileDescriptor.writeAll(pieces, toAbsoluteOffset: Int64(offset))
        let ready = try state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            guard accept() else { throw CancellationError() }
            state.landed.insert(offset..<offset + UInt64(count))
            return Self.takeSatisfiedWaiters(from: &state)
        }
        for continuation in ready { continuation.resume() }
    }

    private static func takeSatisfiedWaiters(from state: inout State) -> [CheckedContinuation<Void, any Error>] {
        let done = state.waiters.filter { state.landed.contains($0.value.range) }
        for id in done.keys { state.waiters[id] = nil }
        return done.values.map(\.continuation)
    }

    /// Ends a claim. On success its readers have (or will have) their bytes; on failure the bytes
    /// in `untrusted` that were not committed are forgotten and every reader depending on the claim
    /// gets `error`. Returns the forgotten bytes that had landed: readers woken early may have
    /// been given them, so copies of them elsewhere (the kernel's pages) are stale too.
    @discardableResult
    public func finish(_ claim: ContentClaim, error: (any Error)?, untrusted: ByteRanges = ByteRanges())
        -> ByteRanges
    {
        let outcome = state.withLock {
            state -> (
                woken: [CheckedContinuation<Void, any Error>], failed: [CheckedContinuation<Void, any Error>],
                forgotten: ByteRanges
            ) in
            state.claims[claim.id] = nil
            // A cancelled fetch (a stopped pin) says nothing about the remote: the next reader fetches.
            if let error, !(error is CancellationError) { state.recentFailures.append((claim.range, error, .now)) }
            var forgotten = ByteRanges()
            if error != nil {
                for range in untrusted.ranges + [claim.range] {
                    for landed in state.landed.intersection(range).ranges { forgotten.insert(landed) }
                    state.landed.remove(range)
                    for kept in state.committed.intersection(range).ranges {
                        state.landed.insert(kept)
                        forgotten.remove(kept)
                    }
                }
            }
            var failed: [CheckedContinuation<Void, any Error>] = []
            for (id, var waiter) in state.waiters where waiter.pendingClaims.contains(claim.id) {
                waiter.pendingClaims.remove(claim.id)
                let stillMissing = !state.landed.contains(waiter.range)
                if error != nil || (stillMissing && waiter.pendingClaims.isEmpty) {
                    state.waiters[id] = nil
                    failed.append(waiter.continuation)
                } else {
                    state.waiters[id] = waiter
                }
            }
            return (Self.takeSatisfiedWaiters(from: &state), failed, forgotten)
        }
        let failure =
            error
            ?? ProviderError.cannotSynchronize(reason: "a fetch of \(identifier) ended without the bytes it claimed")
        for continuation in outcome.failed { continuation.resume(throwing: failure) }
        for continuation in outcome.woken { continuation.resume() }
        return outcome.forgotten
    }

    /// Records every fully landed block outside the claims still running (`settled`) in the store
    /// (which writes only the bytes of the map that changed), in the current durability epoch: the
    /// blocks' bytes are in the cache file, and their fetch has ended well. The file is fsynced
    /// when the epoch closes (`DurabilityEpochs`), not here.
    /// Concurrent calls coalesce: one runs, and runs once more if bytes landed meanwhile. Each
    /// round first waits in `window`, so that the calls of fetches ending meanwhile join it rather
    /// than each paying a transaction. Returns the map recorded, or nil when another call does the
    /// work.
    func commit(window: CommitWindow? = nil) async throws -> [UInt8]? {
        let proceed = state.withLock { state -> Bool in
            if state.isCommitting {
                state.needsCommit = true
                return false
            }
            state.isCommitting = true
            return true
        }
        guard proceed else { return nil }
        var recorded: [UInt8] = []
        do {
            try await rowWritten?.value
            repeat {
                await window?.wait()
                let (settled, recordedMap) = state.withLock { state -> (ByteRanges, [UInt8]) in
                    state.needsCommit = false
                    return (Self.settled(state), state.recordedMap)
                }
                let map = BlockMap(covering: settled, blockSize: blockSize, size: size)
                // A fetch that completed no block (a short file's tail is a block) has nothing to
                // make durable.
                if map.bytes != recordedMap {
                    let epoch = epochs.enter(fileNumber: fileNumber)
                    try await store.savePresentBlocks(
                        fileNumber: fileNumber, presentBlocks: map.bytes, replacing: recordedMap, epoch: epoch)
                }
                let committed = map.ranges(blockSize: blockSize, size: size)
                state.withLock { state in
                    state.recordedMap = map.bytes
                    state.committed = committed
                }
                recorded = map.bytes
            } while state.withLock({ state in
                if state.needsCommit { return true }
                state.isCommitting = false
                return false
            })
        } catch {
            state.withLock { $0.isCommitting = false }
            throw error
        }
        return recorded
    }

    /// The landed bytes outside the claims still running: what a commit may record. A fetch's
    /// bytes are checked once it ends (its range, its version, that every byte came); one that
    /// fails has them forgotten, so they are recorded only after their claim has ended well.
    private static func settled(_ state: State) -> ByteRanges {
        var settled = state.landed
        for claim in state.claims.values { settled.remove(claim) }
        return settled
    }

    /// Allocates `range` of the cache file (keeping its size) on the calling thread, which must not
    /// be a cooperative one: for a fetch about to write the range. Writes into allocated blocks
    /// skip ext4's delayed allocation, which otherwise reserves, looks up and records every page
    /// as it is written (DECISIONS 132). Best effort: where it fails, the writes allocate as
    /// before.
    public func allocateBlocking(_ range: Range<UInt64>) {
        _ = fallocate(fileDescriptor.rawValue, FALLOC_FL_KEEP_SIZE, off_t(range.lowerBound), off_t(range.count))
    }

    /// Asks the kernel to read `range` of the cache file into the page cache in the background, so
    /// that a sequential reader of bytes already here does not wait for the disk at each request.
    public func preload(_ range: Range<UInt64>) {
        Task {
            try? await BlockingIO.run { [self] in
                _ = posix_fadvise(
                    fileDescriptor.rawValue, off_t(range.lowerBound), off_t(range.count), POSIX_FADV_WILLNEED)
            }
        }
    }

    /// Reads `length` bytes at `offset` from the cache file; the caller made sure they are here.
    public func read(offset: UInt64, length: Int) async throws -> [UInt8] {
        let descriptor = fileDescriptor
        return try await BlockingIO.run {
            var buffer = [UInt8](repeating: 0, count: length)
            let count = try buffer.withUnsafeMutableBytes {
                try descriptor.read(fromAbsoluteOffset: Int64(offset), into: $0)
            }
            return Array(buffer.prefix(count))
        }
    }
}
