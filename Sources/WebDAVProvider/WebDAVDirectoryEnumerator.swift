import FileProviderKit

/// Lists one collection: the first page as soon as the PROPFIND answer has brought it, the rest
/// through a `ListingSpool` that keeps filling behind it. Change enumeration is the working set's
/// business.
struct WebDAVDirectoryEnumerator: ItemEnumerator {
    let provider: WebDAVProvider
    let folder: RemotePath
    let identifier: ItemIdentifier

    func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage {
        let limit = max(suggestedPageSize, 1)
        guard page.isInitial else {
            let result = try await provider.spools.page(page, limit: limit)
            provider.history.noteHandedOut(result.items.map(\.identifier))
            return result
        }
        let (firstPage, handOut) = AsyncThrowingStream<ItemPage, any Error>.makeStream()
        let listing = Task { [provider, folder, identifier] in
            var first: [Item] = []
            var spool: ListingSpool?
            do {
                try await provider.listChildren(of: folder, identifier: identifier) { item, _ in
                    if first.count < limit {
                        first.append(item)
                        return
                    }
                    if spool == nil {
                        // One item more than a page: the first page goes out now, naming the spool.
                        let started = ListingSpool(in: provider.spools)
                        spool = started
                        handOut.yield(ItemPage(items: first, nextPage: try started.firstPage))
                    }
                    try await spool?.append(item)
                }
                if var spool {
                    try await spool.finish()
                } else {
                    handOut.yield(ItemPage(items: first, nextPage: nil))
                }
                handOut.finish()
            } catch {
                spool?.fail(error)
                handOut.finish(throwing: error)
            }
        }
        // If the first page's caller gives up, so does the listing; once the page is out, the
        // rest belongs to the spool and its reader.
        return try await withTaskCancellationHandler {
            for try await result in firstPage {
                provider.history.noteHandedOut(result.items.map(\.identifier))
                return result
            }
            throw CancellationError()
        } onCancel: {
            listing.cancel()
        }
    }

    func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
        throw ProviderError.featureUnsupported
    }

    func currentSyncAnchor() async throws -> SyncAnchor? { nil }
}
