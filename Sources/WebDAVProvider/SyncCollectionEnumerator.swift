import FileProviderKit

/// The working set of a server that offers the `sync-collection` REPORT (RFC 6578): changes are
/// the server's own answer to "what changed since this token", and anchors carry its tokens (see
/// `SyncTokenAnchors`). The listing itself is a walk, paged through a `WalkHistory` snapshot.
struct SyncCollectionEnumerator: ItemEnumerator {
    let provider: WebDAVProvider

    func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage {
        try await provider.history.enumerateItems(startingAt: page, suggestedPageSize: suggestedPageSize) {
            [provider] in try await provider.walk()
        }
    }

    /// One REPORT, asking for at most `suggestedPageSize` changes; a truncated answer gives
    /// `moreComing` and the token of the part received.
    func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
        let token = try await provider.syncTokens.token(in: anchor)
        let changes = try await provider.changes(since: token, limit: max(suggestedPageSize, 1))
        return ChangeBatch(
            updated: changes.updated, deleted: changes.deleted,
            nextAnchor: try await provider.syncTokens.anchor(for: changes.token),
            // A server that truncates without moving its token on would have the engine ask forever.
            moreComing: changes.truncated && changes.token != token)
    }

    func currentSyncAnchor() async throws -> SyncAnchor? {
        try await provider.syncTokens.anchor(for: provider.currentSyncToken())
    }
}
