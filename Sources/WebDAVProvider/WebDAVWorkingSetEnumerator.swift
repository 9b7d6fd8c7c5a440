import FileProviderKit

/// The working set. Its listing is a walk, paged through a `WalkHistory` snapshot. Its changes are
/// the server's own answer to "what changed since this token" where the server offers the
/// `sync-collection` REPORT (RFC 6578; anchors carry its tokens, see `SyncTokenAnchors`), else
/// the difference between walks. A server that lists the REPORT but refuses it is walked from then
/// on: its anchors expire once and the engine starts over.
struct WebDAVWorkingSetEnumerator: ItemEnumerator {
    let provider: WebDAVProvider

    func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage {
        try await provider.history.enumerateItems(startingAt: page, suggestedPageSize: suggestedPageSize, walk: walk)
    }

    /// One REPORT, asking for at most `suggestedPageSize` changes; a truncated answer gives
    /// `moreComing` and the token of the part received.
    func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
        guard try await provider.serverFeatures().syncCollection else {
            return try await provider.history.enumerateChanges(
                from: anchor, suggestedPageSize: suggestedPageSize, walk: walk)
        }
        let token = try await provider.syncTokens.token(in: anchor)
        let changes = try await provider.changes(since: token, limit: max(suggestedPageSize, 1))
        return ChangeBatch(
            updated: changes.updated, deleted: changes.deleted,
            nextAnchor: try await provider.syncTokens.anchor(for: changes.token),
            // A server that truncates without moving its token on would have the engine ask forever.
            moreComing: changes.truncated && changes.token != token)
    }

    func currentSyncAnchor() async throws -> SyncAnchor? {
        if try await provider.serverFeatures().syncCollection {
            do {
                return try await provider.syncTokens.anchor(for: provider.currentSyncToken())
            } catch ProviderError.syncAnchorExpired {
                guard try await !provider.serverFeatures().syncCollection else { throw ProviderError.syncAnchorExpired }
            }
        }
        return try await provider.history.currentSyncAnchor(walk: walk)
    }

    private var walk: WalkHistory.Walk { { [provider] in try await provider.walk() } }
}
