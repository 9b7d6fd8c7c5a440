import FileProviderKit

/// Lists one collection: the first page straight from the PROPFIND answer as it streams in, the
/// rest through a `ListingSpool`. Change enumeration is the working set's business.
struct WebDAVDirectoryEnumerator: ItemEnumerator {
    let provider: WebDAVProvider
    let folder: RemotePath
    let identifier: ItemIdentifier

    func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage {
        let limit = max(suggestedPageSize, 1)
        guard page.isInitial else {
            let result = try await ListingSpool.page(page, in: provider.spoolDirectory, limit: limit)
            provider.history.noteHandedOut(result.items.map(\.identifier))
            return result
        }
        var first: [Item] = []
        var spool: ListingSpool?
        try await provider.listChildren(of: folder, identifier: identifier) { item, _ in
            if first.count < limit {
                first.append(item)
            } else {
                if spool == nil { spool = ListingSpool(directory: provider.spoolDirectory) }
                try await spool?.append(item)
            }
        }
        provider.history.noteHandedOut(first.map(\.identifier))
        return ItemPage(items: first, nextPage: try await spool?.finish())
    }

    func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
        throw ProviderError.featureUnsupported
    }

    func currentSyncAnchor() async throws -> SyncAnchor? { nil }
}
