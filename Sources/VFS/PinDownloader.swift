import BlockCache
import FileProviderKit
import Logging
import MetadataStore
import Synchronization

/// Downloads pinned items in the background (ARCHITECTURE §5): a folder is listed recursively and every
/// file in it fetched whole, at read-ahead priority, so that reads a process waits on go first and
/// no FUSE request waits for a pin. At most `filesAtOnce` files are fetched at a time; each file's
/// fetches go through the pipeline limiter like any other. An unpin stops the download: no
/// further file starts, and the fetches it started are cancelled unless a reader waits on them.
///
/// One download runs per pinned inode; the outcome of the last one (which file failed, and why) is
/// kept for `fpfs pin`, which waits for it.
final class PinDownloader: Sendable {
    private let store: MetadataStore
    private let lister: DirectoryLister
    private let cache: BlockCache
    private let fetcher: ContentFetcher
    private let localFiles: LocalFileFolder
    private let logger: Logger
    private let filesAtOnce = 4

    /// Guards the downloads under way and the failures of the last ones, by pinned inode.
    private struct State {
        var running: [UInt64: Task<Void, Never>] = [:]
        var failures: [UInt64: String] = [:]
    }
    private let state = Mutex(State())

    init(
        store: MetadataStore, lister: DirectoryLister, cache: BlockCache, fetcher: ContentFetcher,
        localFiles: LocalFileFolder, logger: Logger
    ) {
        self.store = store
        self.lister = lister
        self.cache = cache
        self.fetcher = fetcher
        self.localFiles = localFiles
        self.logger = logger
    }

    /// Starts downloading `inode` (recursively) unless a download of it is under way.
    func start(_ inode: UInt64) {
        state.withLock { state in
            guard state.running[inode] == nil else { return }
            state.failures[inode] = nil
            state.running[inode] = Task {
                let failure = await self.download(inode)
                self.state.withLock { state in
                    state.running[inode] = nil
                    state.failures[inode] = failure
                }
            }
        }
    }

    /// Starts the downloads of every pin again (at mount: pinned items may have changed or been
    /// pinned while a download was cut short).
    func resume() {
        Task {
            do {
                for inode in try await store.pinnedRoots() { start(inode) }
            } catch {
                logger.error("cannot read the pins: \(error)")
            }
        }
    }

    /// True while a download of `inode` runs.
    func isDownloading(_ inode: UInt64) -> Bool { state.withLock { $0.running[inode] != nil } }

    /// Why the last download of `inode` failed, if it did.
    func failure(of inode: UInt64) -> String? { state.withLock { $0.failures[inode] } }

    /// Stops the downloads of items pinned no more (after an unpin): no further file of them
    /// starts, and their fetches in flight are cancelled, but for those a reader waits on
    /// (ContentFetcher.cancelFetches, DECISIONS 240).
    func stopUnpinned() async {
        let running = state.withLock { $0.running }
        for (inode, task) in running where !((try? await store.isPinned(inode: inode)) ?? true) {
            task.cancel()
            await task.value
            fetcher.cancelFetches(ofPin: inode)
        }
    }

    /// Stops every download (at unmount); what landed stays.
    func stop() async {
        let tasks = state.withLock { Array($0.running.values) }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }

    /// Lists and fetches everything below `inode`; returns a description of the first failure.
    private func download(_ inode: UInt64) async -> String? {
        var folder = "inode \(inode)"
        do {
            guard let root = try await store.record(inode: inode) else { return nil }
            var files: [ItemRecord] = []
            try await collectFiles(from: root, into: &files, listing: &folder)
            return await withTaskGroup(of: String?.self) { group in
                var next = files.makeIterator()
                var firstFailure: String?
                for _ in 0..<filesAtOnce {
                    guard let file = next.next() else { break }
                    group.addTask { await self.fetchWhole(file, for: inode) }
                }
                while let failure = await group.next() {
                    if firstFailure == nil { firstFailure = failure }
                    if let file = next.next() { group.addTask { await self.fetchWhole(file, for: inode) } }
                }
                return firstFailure
            }
        } catch {
            // Stopped by an unpin (or the unmount): not a failure of the pin.
            if Task.isCancelled { return nil }
            let errno = await describe(error, about: "listing of \(folder) for a pin")
            return "cannot list the pinned folder \(folder): \(errno)"
        }
    }

    /// Adds the files below `record` to `files`; `listing` names the folder being listed, for the
    /// failure's message.
    private func collectFiles(from record: ItemRecord, into files: inout [ItemRecord], listing: inout String)
        async throws
    {
        switch record.item.kind {
        case .file: files.append(record)
        case .symlink: break
        case .directory:
            try Task.checkCancellation()
            listing = await store.logName(inode: record.inode)
            try await lister.ensureListed(record.identifier)
            for child in try await store.children(of: record.identifier) {
                try await collectFiles(from: child, into: &files, listing: &listing)
            }
        }
    }

    /// Fetches all of `record`'s content unless it is local, as part of `pin`'s download; returns
    /// a description of a failure.
    private func fetchWhole(_ record: ItemRecord, for pin: UInt64) async -> String? {
        let item = record.item
        guard item.size > 0, !localFiles.hasContent(record.inode), !Task.isCancelled else { return nil }
        // Unpinned since the download began (a folder below a pinned one): left to eviction.
        guard (try? await store.isPinned(inode: record.inode)) ?? true else { return nil }
        do {
            let content = try await cache.content(
                for: item.identifier, contentVersion: item.version.content, size: item.size)
            guard !content.isComplete else { return nil }
            let name = item.filename.description
            fetcher.prefetch(0..<item.size, of: content, version: item.version, name: name, pin: pin)
            try await fetcher.ensurePresent(
                0..<item.size, of: content, version: item.version, name: name, priority: .readAhead, pin: pin)
            return nil
        } catch {
            if Task.isCancelled { return nil }
            let path = await store.logName(inode: record.inode)
            return "cannot download \(path): \(await describe(error, about: "pin of \(path)"))"
        }
    }

    private func describe(_ error: any Error, about subject: String) async -> String {
        String(describing: await ErrnoMapping.errno(for: error, about: { subject }, logger: logger))
    }
}
