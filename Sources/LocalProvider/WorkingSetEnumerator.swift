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
                (sequence, items) = try Self.present(of: tree, in: snapshots)
                offset = 0
            } else {
                guard let numbers = Self.numbers(in: page.bytes, of: snapshots), numbers.count == 2,
                    let saved = snapshots.load(numbers[0]), numbers[1] <= saved.count
                else { throw ProviderError.pageExpired }
                (sequence, items, offset) = (numbers[0], saved, numbers[1])
            }
            let end = min(items.count, offset + max(suggestedPageSize, 1))
            let next = end < items.count ? try EnumerationPage(Self.token([sequence, end], of: snapshots)) : nil
            return ItemPage(items: Array(items[offset..<end]), nextPage: next)
        }
    }

    func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
        let snapshots = provider.snapshots
        return try await provider.request { tree in
            guard let numbers = Self.numbers(in: anchor.bytes, of: snapshots), [1, 3].contains(numbers.count),
                let before = snapshots.load(numbers[0])
            else { throw ProviderError.syncAnchorExpired }
            let (target, after, offset): (Int?, [Item], Int)
            if numbers.count == 3 {
                guard let saved = snapshots.load(numbers[1]) else { throw ProviderError.syncAnchorExpired }
                (target, after, offset) = (numbers[1], saved, numbers[2])
            } else {
                (target, after, offset) = (nil, try tree.walk(), 0)
            }
            let changes = Self.changes(from: before, to: after)
            if changes.isEmpty { return ChangeBatch(updated: [], deleted: [], nextAnchor: anchor, moreComing: false) }
            let to = try target ?? snapshots.save(after)
            let end = min(changes.count, offset + max(suggestedPageSize, 1))
            let batch = changes[min(offset, end)..<end]
            let more = end < changes.count
            return ChangeBatch(
                updated: batch.compactMap { if case .updated(let item) = $0 { item } else { nil } },
                deleted: batch.compactMap { if case .deleted(let identifier) = $0 { identifier } else { nil } },
                nextAnchor: try SyncAnchor(Self.token(more ? [numbers[0], to, end] : [to], of: snapshots)),
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

    /// Deletions first, children before their folders; then creations and updates, folders before
    /// their children — the order in which the engine can apply them one by one.
    private static func changes(from before: [Item], to after: [Item]) -> [Change] {
        let previous = Dictionary(before.map { ($0.identifier, $0) }, uniquingKeysWith: { first, _ in first })
        let present = Set(after.map(\.identifier))
        let deleted = before.reversed().filter { !present.contains($0.identifier) }.map {
            Change.deleted($0.identifier)
        }
        return deleted + after.filter { previous[$0.identifier] != $0 }.map(Change.updated)
    }

    /// A walk of the tree as a snapshot: the newest one when nothing changed since, else a new one.
    private static func present(of tree: LocalTree, in snapshots: SnapshotStore) throws -> (
        sequence: Int, items: [Item]
    ) {
        let items = try tree.walk()
        if let newest = snapshots.newest(), newest.items == items { return newest }
        return (try snapshots.save(items), items)
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
