import BlockCache
import FileProviderKit
import Logging
import Synchronization

/// Runs the provider's content fetches: one per cached content at a time, shared by every reader
/// of it, each under the remote bound (no progress for `remoteTimeout` fails it).
///
/// A fetch writes through a `CacheSink` into the cached content, so a reader is answered as soon
/// as its bytes land. At the end the returned item must name the version asked for and every byte
/// must have arrived; otherwise nothing of the fetch is kept. Readers learn of a failure from the
/// content (`failWaiters`), which also answers readers who arrive while the failed fetch winds down.
final class ContentFetcher: Sendable {
    private let provider: any FileProvider
    private let cache: BlockCache
    private let configuration: VFSConfiguration
    private let statistics: Statistics
    private let logger: Logger

    /// Guards the fetches in flight, by cache file number.
    private let inFlight = Mutex<[Int64: Task<Void, Never>]>([:])

    init(
        provider: any FileProvider, cache: BlockCache, configuration: VFSConfiguration, statistics: Statistics,
        logger: Logger
    ) {
        self.provider = provider
        self.cache = cache
        self.configuration = configuration
        self.statistics = statistics
        self.logger = logger
    }

    /// Starts fetching the whole of `content` unless a fetch of it is already running.
    func startWholeFetch(of content: CachedContent, version: ItemVersion) {
        inFlight.withLock { inFlight in
            guard inFlight[content.fileNumber] == nil else { return }
            content.clearFailure()
            inFlight[content.fileNumber] = Task { await self.fetchWhole(content, version: version) }
        }
    }

    private func fetchWhole(_ content: CachedContent, version: ItemVersion) async {
        statistics.fetchStarted()
        let progress = ProgressMark()
        let sink = CacheSink(content: content, progress: progress, statistics: statistics)
        let provider = self.provider
        let identifier = content.identifier
        var failed = false
        do {
            let item = try await Deadline.run(limit: configuration.remoteTimeout, progress: progress) {
                try await provider.fetchContents(for: identifier, version: version, into: sink)
            }
            guard item.version.content == content.contentVersion else {
                throw ProviderError.versionNoLongerAvailable
            }
            guard content.isComplete else {
                throw ProviderError.cannotSynchronize(
                    reason: "fetch of \(identifier) ended after \(content.presentBytes) of \(content.size) bytes")
            }
            try await cache.commit(content)
        } catch {
            failed = true
            logger.warning("fetch of \(identifier) failed: \(error)")
            content.discardUncommitted()
            content.failWaiters(with: error)
        }
        statistics.fetchEnded(failed: failed)
        _ = inFlight.withLock { $0.removeValue(forKey: content.fileNumber) }
    }
}
