import FileProviderKit

/// Lists every item below the root and reports what changed since an anchor, by comparing walks of
/// the tree with snapshots kept in the `SnapshotStore`.
///
/// Tokens are text: `<session>.<snapshot>` for an anchor; `<session>.<from>.<to>.<offset>` for an
/// anchor in the middle of a long list of changes between two snapshots; `<session>.<snapshot>.<offset>`
/// for a page of the listing, which pages through the snapshot the first page took. Each is well
/// under the 500 bytes allowed.
struct WorkingSetEnumerator: ItemEnumerator {
    let provider: LocalProvider

    func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage {
        let snapshots = provider.snapshots
        return try await provider.request { tree in
            let (sequence, items, offset): (Int, [Item], Int)
            if page.isInitial {
                let present = try Self.present(of: tree, in: snapshots)
                (sequence, items, offset) = (present.sequence, present.snapshot.items, 0)
            } else {
                guard let numbers = Self.numbers(in: page.bytes, of: snapshots), numbers.count == 2,
                    let saved = snapshots.load(numbers[0]), numbers[1] <= saved.items.count
                else { throw ProviderError.pageExpired }
                (sequence, items, offset) = (numbers[0], saved.items, numbers[1])
            }
            let end = min(items.count, offset + max(suggestedPageSize, 1))
            let next = end < items.count ? try EnumerationPage(Self.token([sequence, end], of: snapshots)) : nil
            return ItemPage(items: Array(items[offset..<end]), nextPage: next)
        }
    }

    func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
        let snapshots = provider.snapshots
        return try await provider.request { tree in
            guard let numbers = Self.numbers(in: anchor.bytes, of: snapshots), [1, 3].contains(numbers.count) else {
                throw ProviderError.syncAnchorExpired
            }
            let from = numbers[0]
            let (to, offset): (Int, Int)
            if numbers.count == 3 {
                (to, offset) = (numbers[1], numbers[2])
            } else {
                let walked = try Self.walk(tree, noting: snapshots)
                let newest = snapshots.newest()?.sequence ?? from
                if try Self.changes(from: from, through: newest, to: walked, in: snapshots).isEmpty {
                    return ChangeBatch(updated: [], deleted: [], nextAnchor: anchor, moreComing: false)
                }
                (to, offset) = (try snapshots.save(walked), 0)
            }
            guard let target = snapshots.load(to) else { throw ProviderError.syncAnchorExpired }
            let changes = try Self.changes(from: from, through: to - 1, to: target, in: snapshots)
            let end = min(changes.count, offset + max(suggestedPageSize, 1))
            let batch = changes[min(offset, end)..<end]
            let more = end < changes.count
            return ChangeBatch(
                updated: batch.compactMap { if case .updated(let item) = $0 { item } else { nil } },
                deleted: batch.compactMap { if case .deleted(let identifier) = $0 { identifier } else { nil } },
                nextAnchor: try SyncAnchor(Self.token(more ? [from, to, end] : [to], of: snapshots)),
                moreComing: more)
        }
    }

    func currentSyncAnchor() async throws -> SyncAnchor? {
        let snapshots = provider.snapshots
        return try await provider.request { tree in
            try SyncAnchor(Self.token([Self.present(of: tree, in: snapshots).sequence], of: snapshots))
        }
    }

    /// One change between two snapshots.
    private enum Change {
        case updated(Item)
        case deleted(ItemIdentifier)
    }

    /// The changes from snapshot `from` to `target`, which comes after the snapshots up to
    /// `through`. Deletions first, children before their folders, then the tombstones of every
    /// snapshot after `from`; then creations and updates, folders before their children — the
    /// order in which the engine can apply them one by one. Throws `syncAnchorExpired` when a
    /// snapshot it needs is gone.
    private static func changes(
        from: Int, through: Int, to target: SnapshotStore.Snapshot, in snapshots: SnapshotStore
    ) throws -> [Change] {
        guard let before = snapshots.load(from)?.items else { throw ProviderError.syncAnchorExpired }
        var tombstones = target.tombstones
        for sequence in stride(from: from + 1, through: through, by: 1) {
            guard let between = snapshots.load(sequence) else { throw ProviderError.syncAnchorExpired }
            tombstones += between.tombstones
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
    private static func walk(_ tree: LocalTree, noting snapshots: SnapshotStore) throws -> SnapshotStore.Snapshot {
        let handedOut = snapshots.takeHandedOut()
        let items = try tree.walk()
        let tombstones = handedOut.subtracting(items.map(\.identifier)).sorted { $0.rawValue < $1.rawValue }
        return SnapshotStore.Snapshot(items: items, tombstones: tombstones)
    }

    /// A walk of the tree as a snapshot: the newest one when nothing changed since, else a new one.
    private static func present(of tree: LocalTree, in snapshots: SnapshotStore) throws
        -> (sequence: Int, snapshot: SnapshotStore.Snapshot)
    {
        let walked = try walk(tree, noting: snapshots)
        if let newest = snapshots.newest(), newest.snapshot.items == walked.items, walked.tombstones.isEmpty {
            return newest
        }
        return (try snapshots.save(walked), walked)
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
