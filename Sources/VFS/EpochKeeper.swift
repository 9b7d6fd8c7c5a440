import BlockCache
import Logging
import MetadataStore
import Synchronization

/// Closes the block cache's durability epoch every `VFSConfiguration.durabilityEpochLength`, and
/// once more at unmount (DECISIONS 154): downloaded blocks are recorded at once, and are known to
/// be on disk within about that long.
final class EpochKeeper: Sendable {
    private let cache: BlockCache
    /// For the paths of the files a failed flush names (DECISIONS 242).
    private let store: MetadataStore
    private let logger: Logger
    private let timer = Mutex<Task<Void, Never>?>(nil)

    init(cache: BlockCache, store: MetadataStore, logger: Logger) {
        self.cache = cache
        self.store = store
        self.logger = logger
    }

    func start(every interval: Duration) {
        let task = Task { [self] in
            while (try? await Task.sleep(for: interval)) != nil {
                // In a task of its own, so that `stop` cancelling the timer does not cancel a
                // close under way.
                await Task { await closeEpoch() }.value
            }
        }
        timer.withLock { $0 = task }
    }

    /// Stops the timer, lets a close under way end, and closes the epoch once more.
    func stop() async {
        let task = timer.withLock { $0.take() }
        task?.cancel()
        await task?.value
        await closeEpoch()
    }

    private func closeEpoch() async {
        do {
            for identifier in try await cache.closeDurabilityEpoch() {
                let path = await store.logName(of: identifier)
                logger.error("cannot flush the cache file of \(path) to disk; its cached bytes are forgotten")
            }
        } catch {
            logger.error("cannot record the cache's durable epoch: \(error)")
        }
    }
}
