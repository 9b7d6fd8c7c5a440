/// One page of a listing: the items, and where the next page starts (nil when this was the last).
public struct ItemPage: Sendable {
    public var items: [Item]
    public var nextPage: EnumerationPage?

    public init(items: [Item], nextPage: EnumerationPage?) {
        self.items = items
        self.nextPage = nextPage
    }
}

/// One batch of changes since an anchor: items created or updated (including renames and moves),
/// identifiers deleted, the anchor after this batch, and whether more batches follow at once.
public struct ChangeBatch: Sendable {
    public var updated: [Item]
    public var deleted: [ItemIdentifier]
    public var nextAnchor: SyncAnchor
    public var moreComing: Bool

    public init(updated: [Item], deleted: [ItemIdentifier], nextAnchor: SyncAnchor, moreComing: Bool) {
        self.updated = updated
        self.deleted = deleted
        self.nextAnchor = nextAnchor
        self.moreComing = moreComing
    }
}

/// Lists one container and reports its changes (NSFileProviderEnumerator).
///
/// For a directory, `enumerateItems` returns its direct children. For `.workingSet` it returns
/// every item the provider knows, and `enumerateChanges` reports changes anywhere on the remote.
/// Errors: `pageExpired` or `syncAnchorExpired` make the engine start over from the initial page.
public protocol ItemEnumerator: Sendable {
    /// Items from `page` on. `suggestedPageSize` is a hint; a provider may return fewer or up to
    /// 100 times as many.
    func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage

    /// Changes since `anchor`. Throws `ProviderError.syncAnchorExpired` when the provider can no
    /// longer tell, and `featureUnsupported` when it cannot report changes at all. Deletions
    /// include items created after the anchor that the engine may have learned from a listing
    /// meanwhile: when in doubt, report a deletion (deleting an unknown identifier is harmless).
    func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch

    /// The anchor of the remote's present state, to start reporting changes from.
    func currentSyncAnchor() async throws -> SyncAnchor?
}
