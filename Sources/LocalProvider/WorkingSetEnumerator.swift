import FileProviderKit

/// Lists every item below the root and reports what changed since an anchor, by comparing walks of
/// the tree (see `WalkHistory`).
struct WorkingSetEnumerator: ItemEnumerator {
    let provider: LocalProvider

    func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage {
        try await provider.history.enumerateItems(startingAt: page, suggestedPageSize: suggestedPageSize, walk: walk)
    }

    func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
        try await provider.history.enumerateChanges(from: anchor, suggestedPageSize: suggestedPageSize, walk: walk)
    }

    func currentSyncAnchor() async throws -> SyncAnchor? {
        try await provider.history.currentSyncAnchor(walk: walk)
    }

    private var walk: WalkHistory.Walk {
        { [provider] in try await provider.request { tree in try tree.walk() } }
    }
}
