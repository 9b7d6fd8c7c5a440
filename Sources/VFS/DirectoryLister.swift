import FileProviderKit
import Logging
import MetadataStore
import Synchronization

/// Brings directory listings from the provider into the store, once per directory.
///
/// The first lookup or readdir in a directory enumerates it page by page, stored in runs of pages
/// (`storedRunLength`); at the end, children that vanished are removed and the directory is
/// marked complete. Later requests are answered from the store. Concurrent requests for the same
/// directory share one enumeration.
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
    /// Applies the remote's present state of an item as a round would (`ChangeReplicator`), for
    /// the files a listing found at another version than the bytes here (DECISIONS 320).
    let remoteState = Mutex<(@Sendable (ItemIdentifier) async throws -> Void)?>(nil)

    /// How many times a listing starts over after `pageExpired` before giving up.
    private static let maximumRestarts = 3

    /// A first listing is stored in runs of this many items, which the store sorts into its
    /// index order (DECISIONS 92): long enough that each of its transactions touches a narrow
    /// part of a big folder's index, short enough that a run's items (a few hundred bytes each)
    /// stay a few megabytes.
    static let storedRunLength = 20_000

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

    /// True when memory knows `directory` is completely listed (no store read).
    func isKnownComplete(_ directory: ItemIdentifier) -> Bool {
        state.withLock { $0.complete.contains(directory) }
    }

    /// Returns once `directory` is completely listed in the store.
    func ensureListed(_ directory: ItemIdentifier) async throws {
        if state.withLock({ $0.complete.contains(directory) }) { return }
        let known = try await store.listingState(of: directory)
        if known == .complete {
            state.withLock { _ = $0.complete.insert(directory) }
            return
        }
        // A listing that ran while the store was read has ended complete before it left
        // `inFlight` (`list`), so checking both under one lock never lists a folder twice.
        let task = state.withLock { state -> Task<Void, any Error>? in
            if let running = state.inFlight[directory] { return running }
            if state.complete.contains(directory) { return nil }
            let task = Task { try await self.list(directory, refreshing: known == .stale) }
            state.inFlight[directory] = task
            return task
        }
        guard let task else { return }
        do {
            try await task.value
        } catch let error where known == .stale && FileSystem.meansUnreachable(error) {
            // A stale listing still serves while the remote is away: what was listed stays
            // listable offline. It is listed again at the next mount.
            logger.info("serving the last listing of \(directory): the remote cannot be reached (\(error))")
            state.withLock { _ = $0.complete.insert(directory) }
        }
    }

    /// `ensureListed`, but a remote that cannot be reached is no failure: returns false, and the
    /// caller answers from what the store knows (local items only, in a folder never listed). A
    /// name looked up or made there is checked against the remote later (DECISIONS 182).
    func listedUnlessUnreachable(_ directory: ItemIdentifier) async throws -> Bool {
        do {
            try await ensureListed(directory)
            return true
        } catch let error where FileSystem.meansUnreachable(error) {
            logger.info("\(directory) is not listed: the remote cannot be reached (\(error))")
            return false
        }
    }

    /// Forgets that `directories` were listed: items new to the store, which has no listing of
    /// them. A folder deleted here and back from the remote (a deletion it refused) kept the
    /// identifier memory knew complete, and showed empty for good.
    func forget(_ directories: [ItemIdentifier]) {
        guard !directories.isEmpty else { return }
        state.withLock { $0.complete.subtract(directories) }
    }

    /// Marks `directories` stale: their next use lists them again. (The store first, so that a
    /// lookup meanwhile cannot take them as complete from the store.)
    func markStale(_ directories: [ItemIdentifier]) async throws {
        guard !directories.isEmpty else { return }
        try await store.markListingsStale(directories)
        state.withLock { $0.complete.subtract(directories) }
    }

    /// Lists `directory` into the store. A first listing stores its pages a run at a time. Listing a
    /// stale folder again is different: its children in the store may be newer than the remote
    /// (a local rename sent while the listing ran would come back as the old name), so it is done
    /// only while the journal is empty, and applied only if no local change came meanwhile;
    /// otherwise the last listing keeps serving and stays stale.
    private func list(_ directory: ItemIdentifier, refreshing: Bool) async throws {
        defer { state.withLock { _ = $0.inFlight.removeValue(forKey: directory) } }
        var journal: JournalState?
        if refreshing {
            journal = try await store.journalState()
            guard journal?.isEmpty == true else { return }
        }
        var listed: [Item] = []
        let limit = configuration.remoteTimeout
        let provider = self.provider
        // Made under the first page's bound: most folders are one page, and each bound costs two
        // tasks.
        var enumerator: (any ItemEnumerator)?
        var page = EnumerationPage.initial
        var seen = Set<ItemIdentifier>()
        var restarts = 0
        var heldHere: [ItemIdentifier] = []
        while true {
            let current = page
            let pageSize = configuration.suggestedPageSize
            let made = enumerator
            let result: ItemPage
            do {
                (enumerator, result) = try await Deadline.run(limit: limit) {
                    let used: any ItemEnumerator
                    if let made { used = made } else { used = try await provider.enumerator(for: directory) }
                    return (used, try await used.enumerateItems(startingAt: current, suggestedPageSize: pageSize))
                }
            } catch ProviderError.pageExpired where restarts < Self.maximumRestarts {
                restarts += 1
                logger.info("listing of \(directory) restarts: page expired")
                page = .initial
                seen = []
                listed = []
                continue
            }
            statistics.update { $0.listings.pages += 1 }
            var items: [Item] = []
            for var item in result.items {
                if let reason = item.unshowableReason {
                    let folder = await store.logName(of: directory)
                    logger.warning("skipping \(item.filename) in \(folder): \(reason)")
                    continue
                }
                item.parentIdentifier = directory
                items.append(item)
                seen.insert(item.identifier)
            }
            listed += items
            let last = result.nextPage == nil
            if !refreshing, last || listed.count >= Self.storedRunLength {
                // The last run also ends the listing, in its own last transaction.
                heldHere += try await store.storeListed(
                    listed, transactionSize: configuration.suggestedPageSize,
                    completing: last ? .init(directory: directory, seen: seen) : nil)
                listed = []
            }
            guard let next = result.nextPage else { break }
            page = next
        }
        if let journal {
            guard let left = try await store.replaceListing(of: directory, with: listed, ifJournalAt: journal.sequence)
            else { return }
            heldHere += left
        }
        statistics.update { $0.listings.directories += 1 }
        state.withLock { _ = $0.complete.insert(directory) }
        applyRemoteState(of: heldHere)
    }

    /// Has each of `identifiers` applied as a round would, from a task of its own: the listing
    /// may serve a readdir, whose folder the kernel holds while the change's notifications wait
    /// for it. A failure leaves it to the next round.
    private func applyRemoteState(of identifiers: [ItemIdentifier]) {
        guard !identifiers.isEmpty, let apply = remoteState.withLock({ $0 }) else { return }
        let logger = self.logger
        Task {
            for identifier in identifiers {
                do {
                    try await apply(identifier)
                } catch {
                    logger.warning("cannot take the remote's version of \(identifier) that a listing found: \(error)")
                }
            }
        }
    }
}
