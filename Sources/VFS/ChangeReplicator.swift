import BlockCache
import FileProviderKit
import FuseKit
import Logging
import MetadataStore
import Synchronization

/// Brings changes made on the remote into the mount (ARCHITECTURE §5).
///
/// A round asks the working-set enumerator for the changes since the anchor saved in the store
/// (so a remount continues where the last mount stopped), applies them to the store, drops stale
/// cached contents and tells the kernel which names, attributes and pages changed, so that long
/// cache timeouts stay correct. Without an anchor, or when the remote says it expired, a round
/// lists the whole working set and compares it with what the store knows.
///
/// Rounds run one after another: at start, every `pollInterval`, and on `replicateNow` (`fpfs
/// signal`). Local changes win here: the store leaves items with pending changes alone, and the
/// uploader meets the remote's version when it sends them (the conflict path of the writes).
final class ChangeReplicator: Sendable {
    private let provider: any FileProvider
    private let store: MetadataStore
    private let cache: BlockCache
    private let localFiles: LocalFileFolder
    private let nodes: NodeTable
    private let lister: DirectoryLister
    private let kernel: KernelCache
    private let configuration: VFSConfiguration
    private let statistics: Statistics
    private let logger: Logger
    /// Called when remote deletions turned local work into creations the uploader must send.
    private let wakeUploader: @Sendable () -> Void
    /// Called after a round applied changes (pins download what appeared in pinned folders).
    private let changesApplied: @Sendable () -> Void

    /// The store's setting that holds the working set's anchor, in hex.
    static let anchorSetting = "workingSetAnchor"

    private struct State {
        /// The newest round asked for; the next one waits for it.
        var last: Task<Int, any Error>?
        var loop: Task<Void, Never>?
        var first: Task<Int, any Error>?
        /// The remote cannot report changes: no more rounds.
        var unsupported = false
    }
    private let state = Mutex(State())

    init(
        provider: any FileProvider, store: MetadataStore, cache: BlockCache, localFiles: LocalFileFolder,
        nodes: NodeTable, lister: DirectoryLister, kernel: KernelCache, configuration: VFSConfiguration,
        statistics: Statistics,
        logger: Logger, wakeUploader: @escaping @Sendable () -> Void,
        changesApplied: @escaping @Sendable () -> Void = {}
    ) {
        self.provider = provider
        self.store = store
        self.cache = cache
        self.localFiles = localFiles
        self.nodes = nodes
        self.lister = lister
        self.kernel = kernel
        self.configuration = configuration
        self.statistics = statistics
        self.logger = logger
        self.wakeUploader = wakeUploader
        self.changesApplied = changesApplied
    }

    /// Runs a round every `pollInterval` (none when it is nil), the first of them now when
    /// `roundNow`.
    func start(roundNow: Bool) {
        let first = roundNow ? schedule() : nil
        let loop = Task {
            _ = await first?.result
            while let interval = self.configuration.pollInterval, !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { return }
                _ = try? await self.schedule().value
            }
        }
        state.withLock {
            $0.loop = loop
            $0.first = first
        }
    }

    /// Returns once the round begun by `start` (if any) ended, or after `limit`.
    func awaitFirstRound(upTo limit: Duration) async {
        guard let first = state.withLock({ $0.first }) else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await first.result }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Stops polling and waits for a round under way to end.
    func stop() async {
        let (loop, last) = state.withLock { ($0.loop, $0.last) }
        loop?.cancel()
        last?.cancel()
        await loop?.value
        _ = await last?.result
    }

    /// Runs a round that begins after this call (`fpfs signal`) and returns how many changes it
    /// applied.
    func replicateNow() async throws -> Int {
        try await schedule().value
    }

    private func schedule() -> Task<Int, any Error> {
        state.withLock { state in
            let previous = state.last
            let round = Task {
                _ = await previous?.result
                return try await self.round()
            }
            state.last = round
            return round
        }
    }

    // MARK: Rounds

    /// Enumerations may walk a whole tree, which takes longer than one request may: they get
    /// twenty times the remote bound.
    private var enumerationLimit: Duration { configuration.remoteTimeout * 20 }

    private func round() async throws -> Int {
        if state.withLock({ $0.unsupported }) { throw ProviderError.featureUnsupported }
        defer {
            store.ownWritesRoundEnded()
            configuration.changeRoundEnded?()
        }
        do {
            // Before the remote is asked: what it answers may predate uploads that end meanwhile.
            var sweep = RoundSweep(mark: store.ownWritesMark())
            var applied = try await changesSinceAnchor(&sweep)
            if !sweep.raced.isEmpty {
                var again = RoundSweep(mark: store.ownWritesMark())
                applied += try await applyPresentState(of: sweep.raced, sweep: &again)
                if !again.raced.isEmpty {
                    logger.debug("\(again.raced.count) items changed by uploads while asked again; kept as uploaded")
                }
            }
            statistics.update {
                $0.replication.rounds += 1
                $0.replication.changes += applied
                $0.replication.lastError = nil
            }
            if applied > 0 {
                logger.info("applied \(applied) changes from the remote")
                changesApplied()
            }
            return applied
        } catch ProviderError.featureUnsupported {
            state.withLock { $0.unsupported = true }
            logger.notice("the remote cannot report its changes; the mount shows them after a remount")
            throw ProviderError.featureUnsupported
        } catch {
            if !Task.isCancelled {
                statistics.update { $0.replication.lastError = "\(error)" }
                statistics.noteProblem("asking the remote for its changes failed: \(error)")
                logger.warning("could not ask the remote for its changes: \(error)")
            }
            throw error
        }
    }

    /// What a round carries from batch to batch: its mark (none: nothing is left alone), and the
    /// items it left alone for it.
    private struct RoundSweep {
        let mark: UInt64?
        var raced: [ItemIdentifier] = []
    }

    private func changesSinceAnchor(_ sweep: inout RoundSweep) async throws -> Int {
        let provider = self.provider
        let enumerator = try await Deadline.run(limit: configuration.remoteTimeout) {
            try await provider.enumerator(for: .workingSet)
        }
        guard var anchor = try await savedAnchor() else { return try await compareEverything(enumerator, &sweep) }
        var applied = 0
        let pageSize = configuration.suggestedPageSize
        while true {
            let from = anchor
            let batch: ChangeBatch
            do {
                batch = try await Deadline.run(limit: enumerationLimit) {
                    try await enumerator.enumerateChanges(from: from, suggestedPageSize: pageSize)
                }
            } catch ProviderError.syncAnchorExpired {
                logger.notice("the remote no longer knows the saved anchor; comparing everything")
                return applied + (try await compareEverything(enumerator, &sweep))
            }
            applied += try await apply(updated: batch.updated, deleted: batch.deleted, sweep: &sweep)
            anchor = batch.nextAnchor
            try await save(anchor)
            if !batch.moreComing { return applied }
        }
    }

    /// Lists the whole working set and applies the difference to what the store knows. The anchor
    /// is taken first, so a change made while the listing runs is reported again next round rather
    /// than missed. This is also a first mount's first round (DECISIONS 71).
    private func compareEverything(_ enumerator: any ItemEnumerator, _ sweep: inout RoundSweep) async throws -> Int {
        guard
            let anchor = try await Deadline.run(limit: enumerationLimit, { try await enumerator.currentSyncAnchor() })
        else { throw ProviderError.featureUnsupported }
        statistics.update { $0.replication.fullComparisons += 1 }
        // What the store knows is read before the listing: an item whose creation an upload
        // completes while the listing runs is missing from the listing, and must not count as
        // gone (git clone into the mount lost objects so; DECISIONS 194).
        let known = try await store.remoteIdentifiers()
        var remote: [Item] = []
        var page = EnumerationPage.initial
        var restarts = 0
        let pageSize = configuration.suggestedPageSize
        while true {
            let current = page
            let result: ItemPage
            do {
                result = try await Deadline.run(limit: enumerationLimit) {
                    try await enumerator.enumerateItems(startingAt: current, suggestedPageSize: pageSize)
                }
            } catch ProviderError.pageExpired where restarts < 3 {
                restarts += 1
                (remote, page) = ([], .initial)
                continue
            }
            remote += result.items
            guard let next = result.nextPage else { break }
            page = next
        }
        // Only what the store knows matters: items it holds, and children of folders it listed.
        let listed = try await store.listedDirectories().union([.rootContainer])
        let relevant = remote.filter { known.contains($0.identifier) || listed.contains($0.parentIdentifier) }
        let gone = known.subtracting(remote.map(\.identifier)).subtracting([.rootContainer])
        var applied = try await apply(updated: [], deleted: Array(gone), sweep: &sweep)
        for start in stride(from: 0, to: relevant.count, by: 1000) {
            applied += try await apply(
                updated: Array(relevant[start..<min(start + 1000, relevant.count)]), deleted: [], sweep: &sweep)
        }
        try await save(anchor)
        return applied
    }

    private func savedAnchor() async throws -> SyncAnchor? {
        guard let text = try await store.setting(Self.anchorSetting), let bytes = Self.bytes(hex: text) else {
            return nil
        }
        return try? SyncAnchor(bytes)
    }

    private func save(_ anchor: SyncAnchor) async throws {
        try await store.setSetting(Self.anchorSetting, to: anchor.bytes.map { String(format: "%02x", $0) }.joined())
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count.isMultiple(of: 2) else { return nil }
        return stride(from: 0, to: digits.count, by: 2).compactMap {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)
        }
    }

    // MARK: Applying

    /// Applies what the uploader learned of an item as a round that saw it would: its deletion
    /// (a change of an item the remote no longer has: local work is kept and created anew, the
    /// rest leaves the mount), or, asked anew, its present state (a deletion the remote refused:
    /// the item stays there, and comes back here with what it holds).
    func applyRemoteState(of identifier: ItemIdentifier, knownDeleted: Bool) async throws {
        var sweep = RoundSweep(mark: nil)
        if knownDeleted {
            _ = try await apply(updated: [], deleted: [identifier], sweep: &sweep)
        } else {
            _ = try await applyPresentState(of: [identifier], sweep: &sweep)
        }
    }

    /// Takes what the answer of a read said of the file it fetched (`ContentSink.describe`,
    /// DECISIONS 263) as a round that listed it would, for the version being read and the place
    /// the store knows: its time, mode and attributes show from that read on. The store and the
    /// kept records change before the fetch goes on; the kernel hears of it from a task of its
    /// own, since the read that waits for this fetch may hold what a notification needs.
    func applyFetched(_ item: Item) async {
        do {
            guard let record = try await store.record(identifier: item.identifier), record.item.kind == item.kind,
                record.item.version.content == item.version.content,
                record.item.parentIdentifier == item.parentIdentifier, record.item.filename == item.filename
            else { return }
            var sweep = RoundSweep(mark: nil)
            _ = try await apply(updated: [item], deleted: [], sweep: &sweep, tellingKernelLater: true)
        } catch {
            logger.warning("cannot take what the read of \(item.filename) said of it: \(error)")
        }
    }

    /// Asks the remote for each of `identifiers` and applies its answer: the item as it is now, or
    /// its deletion. For the items a round left alone because an upload of ours ended after its
    /// mark: that round's answer cannot be trusted for them, and the next round may not report
    /// them (its walk can equal this round's). With a new mark, items raced again keep the store's
    /// version: an upload ended after this question too, and what it wrote is the newest known.
    private func applyPresentState(of identifiers: [ItemIdentifier], sweep: inout RoundSweep) async throws -> Int {
        var updated: [Item] = []
        var deleted: [ItemIdentifier] = []
        let provider = self.provider
        for identifier in Set(identifiers) {
            do {
                updated.append(
                    try await Deadline.run(limit: configuration.remoteTimeout) { try await provider.item(for: identifier) })
            } catch ProviderError.noSuchItem {
                deleted.append(identifier)
            }
        }
        return try await apply(updated: updated, deleted: deleted, sweep: &sweep)
    }

    /// Applies one batch to the store, then to the caches and the kernel (from a task of its own
    /// when `tellingKernelLater`); returns how many items changed in the mount. With a sweep,
    /// items uploads changed since its mark are left alone and added to it.
    private func apply(
        updated: [Item], deleted: [ItemIdentifier], sweep: inout RoundSweep, tellingKernelLater: Bool = false
    ) async throws -> Int {
        var showable: [Item] = []
        for item in updated {
            guard let reason = item.unshowableReason else {
                showable.append(item)
                continue
            }
            let path = await store.logName(of: item.filename.bytes, inFolder: item.parentIdentifier)
            logger.warning("skipping the remote's change of \(path): \(reason)")
        }
        let updated = showable
        guard !updated.isEmpty || !deleted.isEmpty else { return 0 }
        let released = Mutex<[UInt64]>([])
        let localFiles = self.localFiles
        let outcome: RemoteChangeOutcome
        do {
            outcome = try await store.applyRemoteChanges(updated: updated, deleted: deleted, since: sweep.mark) { inode in
                guard localFiles.release(inode) else { return false }
                released.withLock { $0.append(inode) }
                return true
            }
        } catch {
            localFiles.restore(released.withLock { $0 })
            throw error
        }
        // Which items left: what a checker's finding is read from (the first few of a big round).
        logger.debug(
            "the remote's changes: \(outcome.added.count) added, \(outcome.updated.count) updated, \(outcome.removed.count) removed \(outcome.removed.prefix(20).map(\.identifier.rawValue)), \(outcome.keptLocal) kept here as creations"
        )
        sweep.raced += outcome.raced
        for inode in outcome.releasedLocalContent { await localFiles.remove(inode) }
        for record in outcome.removed where record.item.kind == .file {
            await cache.discard(record.identifier)
            if localFiles.hasContent(record.inode) { await localFiles.remove(record.inode) }
        }
        for update in outcome.updated where update.before.item.version.content != update.after.item.version.content {
            await cache.discard(update.after.identifier, keeping: update.after.item.version.content)
        }
        if outcome.keptLocal > 0 { wakeUploader() }
        lister.forget(outcome.added.filter { $0.item.kind == .directory }.map(\.identifier))
        try await lister.markStale(outcome.foldersToList)
        if tellingKernelLater {
            let held = refreshHeld(outcome)
            Task { await self.tellKernel(outcome, held: held) }
        } else {
            await tellKernel(outcome, held: refreshHeld(outcome))
        }
        return outcome.updated.count + outcome.added.count + outcome.removed.count
    }

    /// Gives the updated records to the inodes the kernel holds (`NodeTable.refresh`); returns
    /// those inodes.
    private func refreshHeld(_ outcome: RemoteChangeOutcome) -> Set<UInt64> {
        Set(outcome.updated.filter { nodes.refresh($0.after, replacing: $0.before) }.map(\.after.inode))
    }

    /// Invalidates what the kernel may cache of the changed items: names in the folders it holds,
    /// and attributes and pages of the `held` inodes (only attributes for a file whose bytes stayed
    /// the same version). An open handle keeps reading the version it opened (its record and
    /// cached content), whatever the kernel drops.
    private func tellKernel(_ outcome: RemoteChangeOutcome, held: Set<UInt64>) async {
        var inodes: [ItemIdentifier: UInt64] = [.rootContainer: InodeNumber.root.rawValue]
        for record in outcome.removed + outcome.added + outcome.updated.map(\.after) {
            inodes[record.identifier] = record.inode
        }
        func heldFolder(_ identifier: ItemIdentifier) async -> InodeNumber? {
            var inode = inodes[identifier]
            if inode == nil { inode = try? await store.record(identifier: identifier)?.inode }
            guard let inode, nodes.holds(InodeNumber(inode)) else { return nil }
            return InodeNumber(inode)
        }
        for update in outcome.updated {
            let (before, after) = (update.before.item, update.after.item)
            if before.parentIdentifier != after.parentIdentifier || before.filename != after.filename {
                if let parent = await heldFolder(before.parentIdentifier) {
                    await kernel.invalidateEntry(parent: parent, name: before.filename.bytes)
                }
                if let parent = await heldFolder(after.parentIdentifier) {
                    await kernel.invalidateEntry(parent: parent, name: after.filename.bytes)
                }
            }
            guard held.contains(update.after.inode) else { continue }
            if after.kind == .file, before.version.content == after.version.content {
                await kernel.invalidateAttributes(of: InodeNumber(update.after.inode))
            } else {
                await kernel.invalidateContent(of: InodeNumber(update.after.inode))
            }
        }
        for record in outcome.added {
            if let parent = await heldFolder(record.item.parentIdentifier) {
                await kernel.invalidateEntry(parent: parent, name: record.item.filename.bytes)
            }
        }
        for record in outcome.removed {
            guard let parent = await heldFolder(record.item.parentIdentifier) else { continue }
            await kernel.notifyDelete(
                parent: parent, child: InodeNumber(record.inode), name: record.item.filename.bytes)
        }
    }
}
