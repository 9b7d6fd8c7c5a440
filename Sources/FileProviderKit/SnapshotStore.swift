import Foundation
import Synchronization

/// Saved states of the tree, which sync anchors and working-set pages name.
///
/// A remote that keeps no history (a plain folder, most WebDAV servers) gets change enumeration by
/// comparison (see `WalkHistory`): an anchor names a snapshot — every item as one walk found it —
/// and the changes since the anchor are the difference between that snapshot and a new walk.
/// Snapshots are files in the state directory when the engine gives one, so anchors survive a
/// restart of the provider, and live in memory otherwise. Only the newest few are kept; a token
/// naming an older one gets `syncAnchorExpired` (or `pageExpired`).
///
/// With a directory, a snapshot is in memory only while an enumeration uses it: loaded (or saved)
/// at its first call, forgotten at `release`, which the history calls when the enumeration ends.
/// Holding the newest between rounds cost about 400 bytes per remote item for the mount's whole
/// life; reading it back costs a decode of its file per round (DECISIONS 83).
///
/// A walk cannot see an item created and deleted between two snapshots, yet the engine may have
/// learned of it from a folder listing meanwhile. So the store also remembers the identifiers
/// listings and creations handed out, and each snapshot records, as tombstones, those of them its
/// walk no longer found; changes between two snapshots report the tombstones in between as deleted.
final class SnapshotStore: Sendable {
    /// One saved state: the items a walk found, and the tombstones described above.
    struct Snapshot: Sendable {
        var items: [Item]
        var tombstones: [ItemIdentifier]
    }

    /// How many snapshots are kept; enough for a listing and a change enumeration to overlap.
    static let retained = 8

    /// Random per state directory (per store when in memory) and part of every token, so that a
    /// token from another store, or from before the state was wiped, is never taken for one of ours.
    let session: String
    private let directory: URL?
    private let state: Mutex<State>

    private struct State {
        /// The sequence number of the newest snapshot; 0 before the first.
        var newest: Int
        /// Snapshots held in memory: all retained ones without a directory, else those the
        /// enumeration under way uses.
        var cached: [Int: Snapshot] = [:]
        /// Identifiers handed out by listings and creations since the last walk began.
        var handedOut: Set<ItemIdentifier> = []
        /// Whether handed-out identifiers can matter: once there is a snapshot or a walk has
        /// begun. Before that, the walk to come makes the first snapshot, whose tombstones no
        /// change enumeration reads (an anchor names a snapshot, and only later ones' count), so a
        /// mount that never polls keeps no identifier of all it lists.
        var keepsHandedOut: Bool

        init(newest: Int) {
            self.newest = newest
            keepsHandedOut = newest > 0
        }
    }

    /// Opens the store in `directory` (created when missing), or in memory when nil. Blocks.
    init(directory: URL?) throws {
        self.directory = directory
        guard let directory else {
            session = UUID().uuidString
            state = Mutex(State(newest: 0))
            return
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let sessionFile = directory.appending(path: "session")
        // Snapshots of an earlier form (JSON) are dropped with the session that named them, so
        // that the anchors naming them expire instead of naming the new files of the same numbers.
        let earlier = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.hasPrefix("snapshot-") && $0.hasSuffix(".json")
        }
        for name in earlier { try FileManager.default.removeItem(at: directory.appending(path: name)) }
        if earlier.isEmpty, let saved = try? String(contentsOf: sessionFile, encoding: .utf8), !saved.isEmpty {
            session = saved
        } else {
            session = UUID().uuidString
            try session.write(to: sessionFile, atomically: true, encoding: .utf8)
        }
        let saved = try FileManager.default.contentsOfDirectory(atPath: directory.path).compactMap(Self.sequence)
        state = Mutex(State(newest: saved.max() ?? 0))
    }

    /// Remembers identifiers the engine learned outside the working set (see the type's documentation).
    func noteHandedOut(_ identifiers: some Sequence<ItemIdentifier>) {
        state.withLock { state in
            if state.keepsHandedOut { state.handedOut.formUnion(identifiers) }
        }
    }

    /// The identifiers handed out since the last call, to be checked by the walk about to begin.
    func takeHandedOut() -> Set<ItemIdentifier> {
        state.withLock { state in
            defer { (state.handedOut, state.keepsHandedOut) = ([], true) }
            return state.handedOut
        }
    }

    /// Keeps `snapshot` as the newest and returns its sequence number. Blocks.
    func save(_ snapshot: Snapshot) throws -> Int {
        let sequence = state.withLock { state in
            state.newest += 1
            state.cached[state.newest] = snapshot
            state.cached = state.cached.filter { $0.key > state.newest - Self.retained }
            return state.newest
        }
        guard let directory else { return sequence }
        try Data(snapshot.packed()).write(to: file(sequence, in: directory), options: .atomic)
        for old in try FileManager.default.contentsOfDirectory(atPath: directory.path).compactMap(Self.sequence)
        where old <= sequence - Self.retained {
            try? FileManager.default.removeItem(at: file(old, in: directory))
        }
        return sequence
    }

    /// The snapshot `sequence`, or nil when it was never made or is no longer kept. Blocks.
    func load(_ sequence: Int) -> Snapshot? {
        let (newest, cached) = state.withLock { ($0.newest, $0.cached[sequence]) }
        guard sequence > newest - Self.retained, sequence <= newest else { return nil }
        if let cached { return cached }
        guard let directory, let data = try? Data(contentsOf: file(sequence, in: directory)),
            let snapshot = try? Snapshot(packed: [UInt8](data))
        else { return nil }
        state.withLock { $0.cached[sequence] = snapshot }
        return snapshot
    }

    /// Forgets the snapshots held for the enumeration that ended (with a directory; without one,
    /// memory is where they are kept).
    func release() {
        guard directory != nil else { return }
        state.withLock { $0.cached = [:] }
    }

    /// The newest snapshot and its sequence number, if there is one. Blocks.
    func newest() -> (sequence: Int, snapshot: Snapshot)? {
        let newest = state.withLock { $0.newest }
        return load(newest).map { (newest, $0) }
    }

    private func file(_ sequence: Int, in directory: URL) -> URL {
        directory.appending(path: "snapshot-\(sequence)")
    }

    private static func sequence(ofFile name: String) -> Int? {
        guard name.hasPrefix("snapshot-") else { return nil }
        return Int(name.dropFirst("snapshot-".count))
    }
}

extension SnapshotStore.Snapshot {
    /// The snapshot as stored: the count of tombstones and each as a string, then the items as
    /// `PackedItem` records.
    func packed() -> [UInt8] {
        var header = PackedItem.Writer()
        header.integer(UInt32(tombstones.count))
        for tombstone in tombstones { header.string(tombstone.rawValue) }
        var output = header.output
        for item in items { PackedItem.append(item, to: &output) }
        return output
    }

    /// Reads a stored snapshot; throws on one that does not decode whole.
    init(packed input: [UInt8]) throws {
        var header = PackedItem.Reader(input: input, index: 0, end: input.count)
        tombstones = try (0..<header.integer(UInt32.self)).map { _ in ItemIdentifier(try header.string()) }
        items = []
        var index = header.index
        while index < input.count {
            guard let (item, end) = try PackedItem.next(in: input, at: index) else { throw PackedItem.Malformed() }
            items.append(item)
            index = end
        }
    }
}
