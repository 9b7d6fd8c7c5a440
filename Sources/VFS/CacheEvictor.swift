import BlockCache
import FileProviderKit
import Foundation
import FuseKit
import Logging
import MetadataStore
import Synchronization

/// Keeps the cache within `--cache-size` (ARCHITECTURE §5).
///
/// What counts: the bytes the block cache holds and the clean local copies (files written here
/// whose changes are all on the remote, DECISIONS 59). What may go: contents no handle, reader or
/// fetch holds, that are not pinned, least recently used first; a clean local copy is deleted, so
/// the file reads from the remote again. Dirty data never counts and never goes.
///
/// It is cheap on the read path: the block cache keeps its byte count as it commits, and after a
/// commit `wake` only compares that count (plus the clean local bytes of the last pass) with the
/// bound. A pass (one at a time) runs only over the bound; it frees down to 90% of the bound, so
/// that a cache at its bound is not swept again at every commit.
final class CacheEvictor: Sendable {
    let bound: UInt64
    private let cache: BlockCache
    private let store: MetadataStore
    private let localFiles: LocalFileFolder
    private let kernel: KernelCache
    private let openFiles: HandleTable<OpenFile>
    private let logger: Logger

    /// Guards whether a pass runs, whether another is wanted, and the clean local bytes the last
    /// pass found.
    private struct State {
        var isRunning = false
        var runAgain = false
        var cleanLocalBytes: UInt64 = 0
    }
    private let state = Mutex(State())

    init(
        bound: UInt64, cache: BlockCache, store: MetadataStore, localFiles: LocalFileFolder, kernel: KernelCache,
        openFiles: HandleTable<OpenFile>, logger: Logger
    ) {
        self.bound = bound
        self.cache = cache
        self.store = store
        self.localFiles = localFiles
        self.kernel = kernel
        self.openFiles = openFiles
        self.logger = logger
    }

    /// Bytes of the clean local copies, as the last pass counted them.
    var cleanLocalBytes: UInt64 { state.withLock { $0.cleanLocalBytes } }

    /// A local copy whose changes just reached the remote: its `bytes` count against the bound
    /// from now on, not from the next pass (which counts them exactly), and may be freed.
    func localCopyBecameClean(bytes: UInt64) {
        state.withLock { $0.cleanLocalBytes += bytes }
        wake()
    }

    /// Starts a pass if the cache is over its bound (after fetched bytes were committed), or with
    /// `always` regardless (at mount: the bound may be smaller than last time, and the clean local
    /// copies are not counted yet).
    func wake(always: Bool = false) {
        let start = state.withLock { state -> Bool in
            guard always || cache.cachedBytes + state.cleanLocalBytes > bound else { return false }
            if state.isRunning {
                state.runAgain = true
                return false
            }
            state.isRunning = true
            return true
        }
        guard start else { return }
        Task {
            repeat {
                do { try await self.pass() } catch { self.logger.error("cache eviction failed: \(error)") }
            } while self.state.withLock { state in
                defer { state.runAgain = false }
                state.isRunning = state.runAgain
                return state.runAgain
            }
        }
    }

    private enum Candidate {
        case cached(BlockCache.EvictionCandidate)
        case local(ItemRecord, bytes: UInt64, modified: Date)

        var lastUsed: Date {
            switch self {
            case .cached(let candidate): candidate.lastUsed
            case .local(_, _, let modified): modified
            }
        }

        var identifier: ItemIdentifier {
            switch self {
            case .cached(let candidate): candidate.identifier
            case .local(let record, _, _): record.identifier
            }
        }
    }

    /// Frees least recently used contents until the cache is at 90% of its bound.
    private func pass() async throws {
        let pinned = try await store.pinnedIdentifiers()
        let open = openFiles.openItems
        var candidates: [Candidate] = []
        var cleanLocalBytes: UInt64 = 0
        for record in try await store.cleanLocalContents() {
            guard let usage = await localFiles.usage(of: record.inode) else { continue }
            cleanLocalBytes += usage.bytes
            if !pinned.contains(record.identifier), !open.inodes.contains(record.inode) {
                candidates.append(.local(record, bytes: usage.bytes, modified: usage.modified))
            }
        }
        state.withLock { $0.cleanLocalBytes = cleanLocalBytes }
        var total = cache.cachedBytes + cleanLocalBytes
        guard total > bound else { return }
        candidates += cache.evictionCandidates().filter {
            !pinned.contains($0.identifier) && !open.identifiers.contains($0.identifier)
        }.map(Candidate.cached)
        candidates.sort { $0.lastUsed < $1.lastUsed }
        let target = bound - bound / 10
        var freed: UInt64 = 0
        var evicted = 0
        for candidate in candidates where total > target {
            do {
                guard let bytes = try await evict(candidate) else { continue }
                total -= min(total, bytes)
                freed += bytes
            } catch {
                // The line names the file (DECISIONS 242); the next pass tries again.
                let path = await store.logName(of: candidate.identifier)
                logger.error("cache eviction stopped: cannot evict \(path): \(error)")
                return
            }
            evicted += 1
        }
        logger.info(
            "evicted \(evicted) contents (\(freed) bytes) to stay within the cache bound of \(bound) bytes; \(total) left"
        )
    }

    /// Evicts `candidate`; the bytes it freed, or nil when it stays.
    private func evict(_ candidate: Candidate) async throws -> UInt64? {
        switch candidate {
        case .cached(let content):
            guard let bytes = try await cache.evict(content.identifier) else { return nil }
            if let record = try await store.record(identifier: content.identifier) {
                await kernel.invalidateContent(of: InodeNumber(record.inode))
            }
            return bytes
        case .local(let record, let bytes, _):
            guard try await evictLocalCopy(of: record) else { return nil }
            state.withLock { $0.cleanLocalBytes -= min($0.cleanLocalBytes, bytes) }
            return bytes
        }
    }

    /// Deletes the clean local copy of `record` unless a change of it waits or it is in use; the
    /// file then reads from the remote. True when it went.
    func evictLocalCopy(of record: ItemRecord) async throws -> Bool {
        guard try await store.forgetCleanLocalContent(inode: record.inode) else { return false }
        guard await localFiles.evictIfUnused(record.inode) else {
            try await store.markLocalContent(inode: record.inode)
            return false
        }
        await kernel.invalidateContent(of: InodeNumber(record.inode))
        return true
    }
}

extension HandleTable where Value == OpenFile {
    /// The items open now, by identifier and by inode, for eviction to leave alone.
    var openItems: (identifiers: Set<ItemIdentifier>, inodes: Set<UInt64>) {
        let records = values.map(\.record)
        return (Set(records.map(\.identifier)), Set(records.map(\.inode)))
    }
}
