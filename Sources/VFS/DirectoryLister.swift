import FileProviderKit
import Logging
import MetadataStore
import Synchronization

/// Brings directory listings from the provider into the store, once per directory.
///
/// The first lookup or readdir in a directory enumerates it page by page, each page stored as it
/// arrives; at the end, children that vanished are removed and the directory is marked complete.
/// Later requests are answered from the store. Concurrent requests for the same directory share one
/// enumeration.
final class DirectoryLister: Sendable {
    private let provider: any FileProvider
    private let store: MetadataStore
    private let configuration: VFSConfiguration
    private let statistics: Statistics
    private let logger: Logger

    /// Guards the directories known complete and the listings in flight.
    private struct State {
        var complete: Set<ItemIdentifier> = []
        var inFlight: [ItemIdentifier: Task<Void, any Error>] = [:]
    }
    private let state = Mutex(State())

    /// How many times a listing starts over after `pageExpired` before giving up.
    private static let maximumRestarts = 3

    init(
        provider: any FileProvider, store: MetadataStore, configuration: VFSConfiguration, statistics: Statistics,
        logger: Logger
    ) {
        self.provider = provider
        self.store = store
        self.configuration = configuration
        self.statistics = statistics
        self.logger = logger
    }

    /// Returns once `directory` is completely listed in the store.
    func ensureListed(_ directory: ItemIdentifier) async throws {
        if state.withLock({ $0.complete.contains(directory) }) { return }
        let known = try await store.listingState(of: directory)
        if known == .complete {
            state.withLock { _ = $0.complete.insert(directory) }
            return
        }
        let task = state.withLock { state -> Task<Void, any Error> in
            if let running = state.inFlight[directory] { return running }
            let task = Task { try await self.list(directory) }
            state.inFlight[directory] = task
            return task
        }
        do {
            try await task.value
        } catch let error where known == .stale && FileSystem.meansUnreachable(error) {
            // A stale listing still serves while the remote is away: what was listed stays
            // listable offline. It is listed again at the next mount.
            logger.info("serving the last listing of \(directory): the remote cannot be reached (\(error))")
            state.withLock { _ = $0.complete.insert(directory) }
        }
    }

    /// Marks `directories` stale: their next use lists them again. (The store first, so that a
    /// lookup meanwhile cannot take them as complete from the store.)
    func markStale(_ directories: [ItemIdentifier]) async throws {
        guard !directories.isEmpty else { return }
        try await store.markListingsStale(directories)
        state.withLock { $0.complete.subtract(directories) }
    }

    private func list(_ directory: ItemIdentifier) async throws {
        defer { state.withLock { _ = $0.inFlight.removeValue(forKey: directory) } }
        let limit = configuration.remoteTimeout
        let provider = self.provider
        let enumerator = try await Deadline.run(limit: limit) { try await provider.enumerator(for: directory) }
        var page = EnumerationPage.initial
        var seen = Set<ItemIdentifier>()
        var restarts = 0
        while true {
            let current = page
            let pageSize = configuration.suggestedPageSize
            let result: ItemPage
            do {
                result = try await Deadline.run(limit: limit) {
                    try await enumerator.enumerateItems(startingAt: current, suggestedPageSize: pageSize)
                }
            } catch ProviderError.pageExpired where restarts < Self.maximumRestarts {
                restarts += 1
                logger.info("listing of \(directory) restarts: page expired")
                page = .initial
                seen = []
                continue
            }
            statistics.update { $0.listings.pages += 1 }
            var items: [Item] = []
            for var item in result.items {
                guard item.filename.isValid else {
                    logger.warning("skipping an item with an invalid name in \(directory): \(item.filename)")
                    continue
                }
                item.parentIdentifier = directory
                items.append(item)
                seen.insert(item.identifier)
            }
            try await store.storeListed(items)
            guard let next = result.nextPage else { break }
            page = next
        }
        try await store.completeListing(of: directory, seen: seen)
        statistics.update { $0.listings.directories += 1 }
        state.withLock { _ = $0.complete.insert(directory) }
    }
}
