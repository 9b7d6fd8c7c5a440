import BlockCache
import FileProviderKit
import FuseKit
import Logging
import MetadataStore
import Synchronization

/// Runs the provider's content fetches (ARCHITECTURE §3).
///
/// Readers and read-ahead express what they need as ranges of a `CachedContent`; the content turns
/// missing parts into claims (aligned runs of blocks, or the whole file for providers without
/// partial fetches), so each block is fetched once however many readers want it. Each claim runs as
/// one provider call, after taking a slot of the pipeline limiter (interactive reads first), under
/// the remote bound (no progress for `remoteTimeout` fails it). What a provider returns is checked
/// before it is trusted: the version asked for, a retrieved range that keeps the alignment contract
/// and covers the claim, every byte delivered. Otherwise the fetch's bytes are forgotten, in the
/// cache and in the kernel's pages (readers woken as their bytes landed may have been given them),
/// and its readers get the error.
final class ContentFetcher: Sendable {
    private let provider: any FileProvider
    private let partialProvider: (any PartialContentFetching)?
    private let cache: BlockCache
    private let store: MetadataStore
    private let kernel: KernelCache
    private let limiter: PipelineLimiter
    private let moves: MovesInFlight
    private let configuration: VFSConfiguration
    private let statistics: Statistics
    private let logger: Logger

    /// The wait of every commit: hurried by `settleCommits`, closed by `drain` (DECISIONS 123, 143).
    private let commitWindow = CommitWindow(length: .milliseconds(500), byteLimit: 8 << 20)
    /// Takes what a read's answer said of the item it fetches (`ContentSink.describe`): set once
    /// the change replicator exists.
    let describedItem = Mutex<(@Sendable (Item) async -> Void)?>(nil)
    /// Guards the running fetch tasks, by cache file and claim.
    private let running = Mutex<[ClaimKey: RunningFetch]>([:])

    private struct RunningFetch {
        /// For promotion, while the fetch waits for a slot.
        let ticket: PipelineLimiter.Ticket
        let claim: ContentClaim
        let content: CachedContent
        /// The pinned inode whose download started this fetch (`cancelFetches(ofPin:)`).
        let pin: UInt64?
        var task: Task<Void, Never>?
        /// Cancelled before its task was recorded: the task is cancelled as it is.
        var isCancelled = false
        /// The fetch has ended and its commit is under way.
        var isCommitting = false
    }

    private struct ClaimKey: Hashable {
        let fileNumber: Int64
        let claim: UInt64
    }
    /// Made when a fetcher starts: the runtime's first check that `ClaimKey` is hashable scans
    /// every conformance of the process, and would otherwise come in a mount's first fetch
    /// (BlockCache.typesOfAFirstRead, DECISIONS 94).
    private static let claimKeyType: Any.Type = Set<ClaimKey>.self

    init(
        provider: any FileProvider, cache: BlockCache, store: MetadataStore, kernel: KernelCache,
        moves: MovesInFlight, configuration: VFSConfiguration, statistics: Statistics, logger: Logger
    ) {
        self.provider = provider
        self.partialProvider = provider as? any PartialContentFetching
        self.cache = cache
        self.store = store
        self.kernel = kernel
        self.limiter = PipelineLimiter(depth: configuration.pipelineDepth)
        self.moves = moves
        _ = Self.claimKeyType  // see its comment
        self.configuration = configuration
        self.statistics = statistics
        self.logger = logger
    }

    /// True when reads fetch aligned blocks rather than whole files.
    var fetchesBlocks: Bool { partialProvider != nil }

    private var granularity: CachedContent.FetchGranularity {
        partialProvider == nil ? .wholeFile : .blocks(cache.blockSize)
    }

    /// Returns once `range` of `content` is local, fetching what is missing at `priority`
    /// (interactive: a process waits, and the fetches it joins go ahead too). The fetches it starts
    /// belong to `pin`'s download, when given.
    ///
    /// A fetch this call joined that was cancelled (a stopped pin's, in the moment between the check
    /// that no reader waits on it and its end) is not this caller's failure: the missing bytes are
    /// claimed again.
    ///
    /// `ahead` is prefetched right after the fetches of `range` have started, not once they have
    /// ended: a sequential reader's next blocks are then on their way while it waits for this one,
    /// instead of a round trip later. Its start (a first window's worth, ReadAheadWindow) rides on
    /// the read's own request when that is new and ends where `ahead` begins: the read's bytes come
    /// first on the connection, where a parallel request would share the server and the cores with
    /// them.
    func ensurePresent(
        _ range: Range<UInt64>, of content: CachedContent, version: ItemVersion, name: String,
        priority: FetchPriority = .interactive, prefetching ahead: ReadAheadWindow.Refill? = nil, pin: UInt64? = nil
    ) async throws {
        // A few times at most: once waiting on its own claims a reader is never cancelled again,
        // so only a provider throwing CancellationError of its own accord could come back each time.
        var attemptsLeft = 3
        while true {
            do {
                return try await waitUntilPresent(
                    range, of: content, version: version, name: name, priority: priority, prefetching: ahead, pin: pin)
            } catch is CancellationError where !Task.isCancelled && attemptsLeft > 1 {
                attemptsLeft -= 1
            }
        }
    }

    private func waitUntilPresent(
        _ range: Range<UInt64>, of content: CachedContent, version: ItemVersion, name: String,
        priority: FetchPriority, prefetching ahead: ReadAheadWindow.Refill?, pin: UInt64?
    ) async throws {
        var prefetched = false
        let firstWindow = ReadAheadWindow.firstWindow(blockSize: cache.blockSize)
        let riding = ahead.map { $0.range.lowerBound..<min($0.range.upperBound, $0.range.lowerBound + firstWindow) }
        try await content.waitUntilPresent(
            range, granularity: granularity, extendingInto: riding,
            start: { claims in
                for claim in claims {
                    start(claim, of: content, version: version, name: name, priority: priority, pin: pin)
                }
            },
            joined: { claims in
                if priority == .interactive {
                    let waiting = running.withLock { running in
                        claims.compactMap { running[ClaimKey(fileNumber: content.fileNumber, claim: $0.id)]?.ticket }
                    }
                    for ticket in waiting { limiter.promote(ticket) }
                }
                if let ahead {
                    prefetch(ahead.range, inRequestsOf: ahead.requestSize, of: content, version: version, name: name)
                    prefetched = true
                }
            })
        if !prefetched, let ahead {
            prefetch(ahead.range, inRequestsOf: ahead.requestSize, of: content, version: version, name: name)
        }
    }

    /// Starts fetching the missing parts of `range` at read-ahead priority, without waiting; for
    /// `pin`'s download, when given.
    ///
    /// The range is cut into aligned pieces of up to `requestSize` (whole blocks, at least one; by
    /// default the largest read-ahead request, as for a whole file), each claimed as runs of
    /// missing blocks and fetched by one request: large requests for a sequential reader, yet
    /// several of them, so the pipeline runs them in parallel.
    func prefetch(
        _ range: Range<UInt64>, inRequestsOf requestSize: UInt64? = nil, of content: CachedContent,
        version: ItemVersion, name: String, pin: UInt64? = nil
    ) {
        guard partialProvider != nil, !range.isEmpty else { return }
        let requestSize = requestSize ?? configuration.readAheadRequestSize
        let pieceSize = max(requestSize / cache.blockSize, 1) * cache.blockSize
        var piece = range.lowerBound / cache.blockSize * cache.blockSize
        while piece < range.upperBound {
            let pieceRange = piece..<min(piece + pieceSize, range.upperBound, content.size)
            piece += pieceSize
            for claim in content.claimMissing(in: pieceRange, granularity: granularity) {
                start(claim, of: content, version: version, name: name, priority: .readAhead, pin: pin)
            }
        }
    }

    private func start(
        _ claim: ContentClaim, of content: CachedContent, version: ItemVersion, name: String, priority: FetchPriority,
        pin: UInt64?
    ) {
        let key = ClaimKey(fileNumber: content.fileNumber, claim: claim.id)
        let ticket = limiter.makeTicket(owner: content.fileNumber)
        running.withLock { $0[key] = RunningFetch(ticket: ticket, claim: claim, content: content, pin: pin) }
        // A free slot is taken now, so that slots go in the order fetches were started (a read's
        // own blocks before the read-ahead started just after them), whatever order the tasks
        // run in.
        let heldSlot = limiter.tryAcquire(priority, owner: content.fileNumber)
        let task = Task {
            defer { _ = running.withLock { $0.removeValue(forKey: key) } }
            let slot: PipelineLimiter.Slot
            do {
                if let heldSlot {
                    slot = heldSlot
                } else {
                    slot = try await limiter.acquire(ticket, priority: priority)
                }
            } catch {
                content.finish(claim, error: error)
                return
            }
            let started = ContinuousClock.now
            let fetched = await fetch(claim, of: content, version: version, name: name)
            if slot.isReadAhead {
                noteReadAheadEnded(UInt64(claim.range.count), after: .now - started, fetched: fetched)
            }
            limiter.release(slot)
            if fetched {
                running.withLock { $0[key]?.isCommitting = true }
                commitWindow.noteFetched(UInt64(claim.range.count))
                await commit(content)
            }
        }
        let cancelled = running.withLock { running -> Bool in
            guard running[key] != nil else { return false }
            running[key]?.task = task
            return running[key]?.isCancelled ?? false
        }
        if cancelled { task.cancel() }
    }

    /// Cancels the fetches `pin`'s download started that no reader waits on (after the download
    /// itself has stopped, so that its own waits are gone): their bytes are wanted no more. A
    /// fetch a reader waits on goes on for it; one whose commit is under way has its bytes.
    func cancelFetches(ofPin pin: UInt64) {
        let cancelled = running.withLock { running -> [Task<Void, Never>] in
            var tasks: [Task<Void, Never>] = []
            for (key, fetch) in running where fetch.pin == pin && !fetch.isCommitting {
                guard !fetch.content.isWaitedOn(fetch.claim) else { continue }
                running[key]?.isCancelled = true
                if let task = fetch.task { tasks.append(task) }
            }
            return tasks
        }
        for task in cancelled { task.cancel() }
    }

    /// Ends the gathering of the commits under way and waits for them, so that fetches that have
    /// ended no longer hold their content (an eviction right after a read would find it in use).
    func settleCommits() async {
        let committing = running.withLock { running in running.values.filter(\.isCommitting).compactMap(\.task) }
        commitWindow.hurry()
        for task in committing { await task.value }
    }

    /// Waits for every fetch in flight to end (each is bounded by the remote bound), so that what
    /// they brought is recorded before the mount goes away. Commits stop gathering: they run now.
    func drain() async {
        commitWindow.close()
        while let tasks = running.withLock({ running in running.isEmpty ? nil : running.values.compactMap(\.task) }) {
            if tasks.isEmpty {
                try? await Task.sleep(for: .milliseconds(5))
                continue
            }
            for task in tasks { await task.value }
        }
    }

    /// Read-ahead may have the last slot while its largest request would end within a second at
    /// the rate this one had: a reader then waits about that long at most for a slot of its own.
    /// A slow or failing remote (or none ended yet) keeps the slot for readers (DECISIONS 101, 103).
    private func noteReadAheadEnded(_ bytes: UInt64, after duration: Duration, fetched: Bool) {
        let quick = fetched && Double(bytes) >= Double(configuration.readAheadRequestSize) * (duration / .seconds(1))
        limiter.keepReserve(!quick)
    }

    /// Records the landed blocks of `content` in the store (made durable by the cache's epochs,
    /// DECISIONS 154), once its fetch has ended and given its slot back: readers were woken as
    /// their bytes landed, and commits of fetches that end within `commitWindow` of each other
    /// share one transaction (DECISIONS 123). `drain` waits for it as for the fetch.
    private func commit(_ content: CachedContent) async {
        do {
            try await cache.commit(content, window: commitWindow)
        } catch {
            let path = await store.logName(of: content.identifier)
            logger.error("cannot record the cached blocks of \(path): \(error)")
        }
    }

    /// Fetches `claim` into `content`; true when every byte of it came.
    @discardableResult
    private func fetch(_ claim: ContentClaim, of content: CachedContent, version: ItemVersion, name: String) async
        -> Bool
    {
        let download = statistics.fetchStarted(name: name, range: claim.range, of: content)
        let progress = ProgressMark()
        let described = describedItem.withLock { $0 }
        let sink = CacheSink(
            content: content, range: claim.range, progress: progress, statistics: statistics, download: download
        ) { item in
            if item.version.content == content.contentVersion { await described?(item) }
        }
        var identifier = content.identifier
        defer { sink.close() }
        do {
            // A move sent meanwhile can give the item another identifier, on the remote before
            // here: the fetch asks again under the new one once the move is recorded (DECISIONS 303).
            while true {
                do {
                    try await fetch(claim, of: content, under: identifier, version: version, into: sink, progress: progress)
                    break
                } catch ProviderError.noSuchItem(let detail) {
                    await moves.waitUntilSent(identifier)
                    guard content.identifier != identifier else { throw ProviderError.noSuchItem(detail) }
                    identifier = content.identifier
                }
            }
            try await sink.flush()
            guard sink.written.contains(claim.range) else {
                throw ProviderError.cannotSynchronize(
                    reason: "fetch of \(claim.range) of \(identifier) delivered only \(sink.written.count) bytes")
            }
            content.finish(claim, error: nil)
            statistics.fetchEnded(download, failed: false)
            return true
        } catch {
            if error is CancellationError {
                logger.debug("fetch of bytes \(claim.range) of \(name) (\(identifier)) stopped")
            } else {
                let path = await store.logName(of: identifier)
                logger.warning("cannot fetch bytes \(claim.range) of \(path) (\(identifier)): \(error)")
                statistics.noteProblem("fetch of \(path) failed: \(error)")
            }
            sink.close()
            let forgotten = content.finish(claim, error: error, untrusted: sink.written)
            if !forgotten.isEmpty { dropKernelCopies(of: forgotten, of: identifier, name: name) }
            statistics.fetchEnded(download, failed: !(error is CancellationError))
            return false
        }
    }

    /// Asks the provider for `claim` of `content` under `identifier`, into `sink`, and checks
    /// what it answered.
    private func fetch(
        _ claim: ContentClaim, of content: CachedContent, under identifier: ItemIdentifier, version: ItemVersion,
        into sink: CacheSink, progress: ProgressMark
    ) async throws {
        if let partialProvider {
            let alignment = cache.blockSize
            let result = try await Deadline.run(limit: configuration.remoteTimeout, progress: progress) {
                try await partialProvider.fetchPartialContents(
                    for: identifier, version: version, minimalRange: claim.range, aligningTo: alignment,
                    options: [.strictVersioning], into: sink)
            }
            guard result.isValid(minimalRange: claim.range, alignment: alignment, size: content.size) else {
                throw ProviderError.cannotSynchronize(
                    reason:
                        "provider returned range \(result.retrievedRange) for \(claim.range) aligned to \(alignment)"
                )
            }
            guard result.item.version.content == content.contentVersion else {
                throw ProviderError.versionNoLongerAvailable
            }
        } else {
            let provider = self.provider
            let item = try await Deadline.run(limit: configuration.remoteTimeout, progress: progress) {
                try await provider.fetchContents(for: identifier, version: version, into: sink)
            }
            guard item.version.content == content.contentVersion else {
                throw ProviderError.versionNoLongerAvailable
            }
        }
    }

    /// Drops the kernel's pages of bytes the cache forgot, so that the next read of them comes
    /// back to the daemon and fetches them again. In a task of its own: the kernel may be waiting
    /// for the answer to a read of these pages, and the invalidation waits for it.
    private func dropKernelCopies(of forgotten: ByteRanges, of identifier: ItemIdentifier, name: String) {
        let (store, kernel, logger) = (self.store, self.kernel, self.logger)
        Task {
            do {
                guard let record = try await store.record(identifier: identifier) else { return }
                for range in forgotten.ranges {
                    await kernel.invalidateContent(of: InodeNumber(record.inode), range: range)
                }
            } catch {
                logger.warning("cannot find the inode of \(name) (\(identifier)) to drop its stale pages: \(error)")
            }
        }
    }
}
