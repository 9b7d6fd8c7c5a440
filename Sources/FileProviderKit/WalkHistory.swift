import Foundation
import Synchronization

/// The working set of a remote that keeps no history, by comparing walks of the whole tree.
///
/// A provider whose remote cannot say what changed since a point in time (a plain folder, a
/// WebDAV server without `sync-collection`) hands its working-set enumerator's calls to this type
/// with a `walk` that lists every item; the history keeps the walks as snapshots (see
/// `SnapshotStore`) and reports the difference between them as changes.
///
/// Tokens are text: `<session>.<snapshot>` for an anchor; `<session>.<from>.<to>.<offset>` for an
/// anchor in the middle of a long list of changes between two snapshots; `<session>.<snapshot>.<offset>`
/// for a page of the listing, which pages through the snapshot the first page took. Each is well
/// under the 500 bytes allowed.
public final class WalkHistory: Sendable {
    /// Lists every item below the root, parents before their children.
    public typealias Walk = @Sendable () async throws -> [Item]

    private let snapshots: SnapshotStore
    /// The snapshot the last walk made or found unchanged, and when that walk ended.
    private let lastWalk = Mutex<(sequence: Int, ended: ContinuousClock.Instant)?>(nil)

    /// How long a walk's snapshot answers a listing's first page instead of a new walk. The engine
    /// takes an anchor (a walk) and then lists (another walk); the listing may be as old as the
    /// anchor, never older, so the second walk of the whole tree is saved.
    static let walkReuse: Duration = .seconds(2)

    /// Keeps snapshots in `directory` (created when missing), so anchors survive a restart; in
    /// memory when nil. Blocks briefly.
    public init(directory: URL?) throws {
        snapshots = try SnapshotStore(directory: directory)
    }

    /// Remembers identifiers the engine learned outside the working set — from folder listings and
    /// creations — so a walk that no longer finds them reports them deleted.
    public func noteHandedOut(_ identifiers: some Sequence<ItemIdentifier>) {
        snapshots.noteHandedOut(identifiers)
    }

    /// `ItemEnumerator.enumerateItems` of the working set.
    public func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int, walk: Walk) async throws
        -> ItemPage
    {
        let snapshots = snapshots
        let (sequence, items, offset): (Int, [Item], Int)
        if page.isInitial, let recent = try await recentWalk() {
            (sequence, items, offset) = (recent.sequence, recent.snapshot.items, 0)
        } else if page.isInitial {
            let present = try await present(walk: walk)
            (sequence, items, offset) = (present.sequence, present.snapshot.items, 0)
        } else {
            guard let numbers = Self.numbers(in: page.bytes, of: snapshots), numbers.count == 2,
                let saved = try await BlockingIO.run({ snapshots.load(numbers[0]) }), numbers[1] <= saved.items.count
            else { throw ProviderError.pageExpired }
            (sequence, items, offset) = (numbers[0], saved.items, numbers[1])
        }
        let end = min(items.count, offset + max(suggestedPageSize, 1))
        let next = end < items.count ? try EnumerationPage(Self.token([sequence, end], of: snapshots)) : nil
        if next == nil { snapshots.release() }
        return ItemPage(items: Array(items[offset..<end]), nextPage: next)
    }

    /// `ItemEnumerator.enumerateChanges` of the working set.
    public func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int, walk: Walk) async throws
        -> ChangeBatch
    {
        let snapshots = snapshots
        guard let numbers = Self.numbers(in: anchor.bytes, of: snapshots), [1, 3].contains(numbers.count) else {
            throw ProviderError.syncAnchorExpired
        }
        let from = numbers[0]
        let (to, offset): (Int, Int)
        if numbers.count == 3 {
            (to, offset) = (numbers[1], numbers[2])
        } else {
            let walked = try await self.walk(walk)
            let saved: Int? = try await BlockingIO.run {
                let newest = snapshots.newest()?.sequence ?? from
                if try Self.changes(from: from, through: newest, to: walked, in: snapshots).isEmpty { return nil }
                return try snapshots.save(walked)
            }
            guard let saved else {
                snapshots.release()
                return ChangeBatch(updated: [], deleted: [], nextAnchor: anchor, moreComing: false)
            }
            (to, offset) = (saved, 0)
        }
        let changes = try await BlockingIO.run {
            guard let target = snapshots.load(to) else { throw ProviderError.syncAnchorExpired }
            return try Self.changes(from: from, through: to - 1, to: target, in: snapshots)
        }
        let end = min(changes.count, offset + max(suggestedPageSize, 1))
        let batch = changes[min(offset, end)..<end]
        let more = end < changes.count
        if !more { snapshots.release() }
        return ChangeBatch(
            updated: batch.compactMap { if case .updated(let item) = $0 { item } else { nil } },
            deleted: batch.compactMap { if case .deleted(let identifier) = $0 { identifier } else { nil } },
            nextAnchor: try SyncAnchor(Self.token(more ? [from, to, end] : [to], of: snapshots)),
            moreComing: more)
    }

    /// `ItemEnumerator.currentSyncAnchor` of the working set.
    public func currentSyncAnchor(walk: Walk) async throws -> SyncAnchor {
        let sequence = try await present(walk: walk).sequence
        snapshots.release()
        return try SyncAnchor(Self.token([sequence], of: snapshots))
    }

    /// One change between two snapshots.
    private enum Change: Sendable {
        case updated(Item)
        case deleted(ItemIdentifier)
    }

    /// The changes from snapshot `from` to `target`, which comes after the snapshots up to
    /// `through`. Deletions first, children before their folders, then the tombstones and the
    /// items of every snapshot after `from`; then creations and updates, folders before their
    /// children — the order in which the engine can apply them one by one. Throws
    /// `syncAnchorExpired` when a snapshot it needs is gone. Blocks.
    ///
    /// An item that only a snapshot between the two had may have been handed out by a listing
    /// that snapshot answered: it is reported deleted too (a deletion of an item the engine never
    /// learned costs nothing; a missed one leaves a file the remote no longer has).
    private static func changes(
        from: Int, through: Int, to target: SnapshotStore.Snapshot, in snapshots: SnapshotStore
    ) throws -> [Change] {
        guard let before = snapshots.load(from)?.items else { throw ProviderError.syncAnchorExpired }
        var tombstones = target.tombstones
        for sequence in stride(from: from + 1, through: through, by: 1) {
            guard let between = snapshots.load(sequence) else { throw ProviderError.syncAnchorExpired }
            tombstones += between.tombstones + between.items.reversed().map(\.identifier)
        }
        let after = target.items
        let previous = Dictionary(before.map { ($0.identifier, $0) }, uniquingKeysWith: { first, _ in first })
        var gone = Set(previous.keys).union(tombstones)
        gone.subtract(after.map(\.identifier))
        var deleted = before.reversed().map(\.identifier).filter { gone.remove($0) != nil }
        deleted += tombstones.filter { gone.remove($0) != nil }
        return deleted.map(Change.deleted) + after.filter { previous[$0.identifier] != $0 }.map(Change.updated)
    }

    /// A walk of the tree, with the identifiers handed out since the last walk that it no longer
    /// finds as tombstones.
    private func walk(_ walk: Walk) async throws -> SnapshotStore.Snapshot {
        let handedOut = snapshots.takeHandedOut()
        let items = try await walk()
        let tombstones = handedOut.subtracting(items.map(\.identifier)).sorted { $0.rawValue < $1.rawValue }
        return SnapshotStore.Snapshot(items: items, tombstones: tombstones)
    }

    /// A walk of the tree as a snapshot: the newest one when nothing changed since, else a new one.
    private func present(walk: Walk) async throws -> (sequence: Int, snapshot: SnapshotStore.Snapshot) {
        let walked = try await self.walk(walk)
        let snapshots = snapshots
        let present = try await BlockingIO.run {
            if let newest = snapshots.newest(), newest.snapshot.items == walked.items, walked.tombstones.isEmpty {
                return newest
            }
            return (try snapshots.save(walked), walked)
        }
        lastWalk.withLock { $0 = (present.sequence, .now) }
        return present
    }

    /// The snapshot of a walk that ended within `walkReuse`, if it is still the newest.
    private func recentWalk() async throws -> (sequence: Int, snapshot: SnapshotStore.Snapshot)? {
        guard let last = lastWalk.withLock({ $0 }), ContinuousClock.now - last.ended < Self.walkReuse else {
            return nil
        }
        let snapshots = snapshots
        return try await BlockingIO.run {
            guard let newest = snapshots.newest(), newest.sequence == last.sequence else { return nil }
            return newest
        }
    }

    private static func token(_ numbers: [Int], of snapshots: SnapshotStore) -> [UInt8] {
        Array(([snapshots.session] + numbers.map(String.init)).joined(separator: ".").utf8)
    }

    /// The numbers of a token of this store; nil for a token of another store or a malformed one.
    private static func numbers(in token: [UInt8], of snapshots: SnapshotStore) -> [Int]? {
        let parts = String(decoding: token, as: UTF8.self).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.first.map(String.init) == snapshots.session else { return nil }
        let numbers = parts.dropFirst().compactMap { Int($0) }.filter { $0 >= 0 }
        return numbers.count == parts.count - 1 ? numbers : nil
    }
}
