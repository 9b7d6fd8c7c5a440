import FileProviderKit

/// Lists one folder, a `ListObjectsV2` page at a time: the page handed back is the server's
/// continuation token behind a tag of this provider's. Change enumeration is the working set's
/// business.
struct S3FolderEnumerator: ItemEnumerator {
    let provider: S3Provider
    let folder: S3Path

    /// What starts a page this provider handed out.
    static let pageTag = "s3:"

    func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage {
        var token: String?
        if !page.isInitial {
            let text = String(decoding: page.bytes, as: UTF8.self)
            guard text.hasPrefix(Self.pageTag) else { throw ProviderError.pageExpired }
            token = String(text.dropFirst(Self.pageTag.count))
        }
        let listed = try await provider.listPage(
            of: folder, token: token, maximumKeys: min(max(suggestedPageSize, 1), 1000), flat: false)
        if page.isInitial, !folder.isRoot, listed.keyCount == 0 { throw ProviderError.noSuchItem(folder.identifier) }
        let items = try await provider.linked(listed.items(in: folder).map(provider.metadata.applied))
        provider.history.noteHandedOut(items.map(\.identifier))
        let next = try listed.nextToken.map { token in
            do { return try EnumerationPage(Self.pageTag + token) } catch {
                throw ProviderError.cannotSynchronize(
                    reason: "listing \(folder): the server's continuation token is longer than a page may be")
            }
        }
        return ItemPage(items: items, nextPage: next)
    }

    func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
        throw ProviderError.featureUnsupported
    }

    func currentSyncAnchor() async throws -> SyncAnchor? { nil }
}
