import FileProviderKit

/// An enumerator of a `FaultInjectingProvider`: listings, change batches and anchors obey the `enumerate`
/// rules (matched against the container), and teach the injector the names they carry.
struct FaultInjectingEnumerator<Inner: FileProvider>: ItemEnumerator {
    let inner: any ItemEnumerator
    let container: ItemIdentifier
    let provider: FaultInjectingProvider<Inner>

    func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage {
        _ = try await provider.intercept(.enumerate, container)
        let page = try await inner.enumerateItems(startingAt: page, suggestedPageSize: suggestedPageSize)
        provider.injector.learn(page.items)
        return page
    }

    func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
        _ = try await provider.intercept(.enumerate, container)
        let batch = try await inner.enumerateChanges(from: anchor, suggestedPageSize: suggestedPageSize)
        provider.injector.learn(batch.updated)
        return batch
    }

    func currentSyncAnchor() async throws -> SyncAnchor? {
        _ = try await provider.intercept(.enumerate, container)
        return try await inner.currentSyncAnchor()
    }
}
