import FileProviderKit
import Foundation
import MetadataStore

/// What the cache holds and frees (ARCHITECTURE §5): the bytes recorded per item and their sum are kept
/// as records change, so asking how big the cache is costs nothing; the order of last use is kept
/// in memory and saved when the cache lets go.
extension BlockCache {
    /// One item the cache could free: not held by a reader or a fetch when asked.
    public struct EvictionCandidate: Sendable {
        public let identifier: ItemIdentifier
        public let bytes: UInt64
        public let lastUsed: Date
    }

    /// Bytes of every recorded content present on this machine.
    public var cachedBytes: UInt64 { state.withLock { $0.totalBytes } }

    /// Calls `handler` after every commit of fetched bytes, so that eviction can look at the size.
    public func onGrowth(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.onGrowth = handler }
    }

    /// Notes that `identifier`'s content was used now (a handle let go of it).
    public func touch(_ identifier: ItemIdentifier) {
        state.withLock { state in
            guard state.records[identifier] != nil else { return }
            state.records[identifier]?.lastUsed = Date()
            state.usedSinceSaved.insert(identifier)
        }
    }

    /// The contents with bytes here that no one holds, least recently used first.
    public func evictionCandidates() -> [EvictionCandidate] {
        state.withLock { state in
            state.bytes.compactMap { identifier, bytes -> EvictionCandidate? in
                guard bytes > 0, !Self.isInUse(identifier, in: state), let record = state.records[identifier] else {
                    return nil
                }
                return EvictionCandidate(identifier: identifier, bytes: bytes, lastUsed: record.lastUsed)
            }
        }.sorted { $0.lastUsed < $1.lastUsed }
    }

    /// True when a reader, a handle or a fetch holds `identifier`'s content, or it is being opened.
    public func isInUse(_ identifier: ItemIdentifier) -> Bool {
        state.withLock { Self.isInUse(identifier, in: $0) }
    }

    private static func isInUse(_ identifier: ItemIdentifier, in state: State) -> Bool {
        state.open[identifier]?.content != nil || state.opening.keys.contains { $0.identifier == identifier }
    }

    /// Frees the cached content of `identifier`: forgets its record and deletes its file. Returns
    /// the bytes freed (0 when nothing is cached), or nil when the content is in use (then nothing
    /// changes).
    public func evict(_ identifier: ItemIdentifier) async throws -> UInt64? {
        enum Outcome {
            case inUse
            case nothingCached
            case removed(ContentRecord, bytes: UInt64)
        }
        let outcome = state.withLock { state -> Outcome in
            if Self.isInUse(identifier, in: state) { return .inUse }
            guard let record = state.records[identifier] else { return .nothingCached }
            let bytes = state.bytes[identifier] ?? 0
            state.setRecord(nil, of: identifier)
            state.usedSinceSaved.remove(identifier)
            return .removed(record, bytes: bytes)
        }
        switch outcome {
        case .inUse: return nil
        case .nothingCached: return 0
        case .removed(let record, let bytes):
            try await deleteFile(of: record)
            return bytes
        }
    }

    /// Saves the times of last use noted since the last save (at unmount: the order of eviction
    /// then survives a remount without a store write per read).
    public func saveLastUsed() async throws {
        let times = state.withLock { state -> [Int64: Date] in
            var times: [Int64: Date] = [:]
            for identifier in state.usedSinceSaved {
                if let record = state.records[identifier] { times[record.fileNumber] = record.lastUsed }
            }
            state.usedSinceSaved.removeAll()
            return times
        }
        try await store.saveLastUsed(times)
    }
}
