/// The working-set enumerator of a provider that keeps its history in a `WalkHistory`: every call
/// goes to the history with the provider's walk.
public struct WalkHistoryEnumerator: ItemEnumerator {
    let history: WalkHistory
    let walk: WalkHistory.Walk

    public init(history: WalkHistory, walk: @escaping WalkHistory.Walk) {
        self.history = history
        self.walk = walk
    }

    public func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage {
        try await history.enumerateItems(startingAt: page, suggestedPageSize: suggestedPageSize, walk: walk)
    }

    public func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
        try await history.enumerateChanges(from: anchor, suggestedPageSize: suggestedPageSize, walk: walk)
    }

    public func currentSyncAnchor() async throws -> SyncAnchor? {
        try await history.currentSyncAnchor(walk: walk)
    }
}
