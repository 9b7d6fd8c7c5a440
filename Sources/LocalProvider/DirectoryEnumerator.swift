import FileProviderKit

/// Lists one folder in pages, by name.
///
/// Names are sorted by their bytes and a page is the last name returned (`n` + its bytes, at most
/// 256 bytes), so the next page starts after it however large the folder is and whatever was added
/// or removed in between. Change enumeration is the working set's business, not a folder's.
struct DirectoryEnumerator: ItemEnumerator {
    let provider: LocalProvider
    let container: ItemIdentifier

    func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage {
        let after = try Self.lastName(in: page)
        let limit = max(suggestedPageSize, 1)
        let history = provider.history
        return try await provider.request { [container] tree in
            let folder = try tree.locate(container)
            guard folder.status.kind == .directory else {
                throw ProviderError.cannotSynchronize(reason: "\(folder.path) is not a folder")
            }
            let names = try tree.children(of: folder.path)
            var next = after.map { last in names.firstIndex { last.bytes.lexicographicallyPrecedes($0.bytes) } } ?? 0
            var items: [Item] = []
            while let index = next, index < names.count, items.count < limit {
                if let item = try tree.child(names[index], of: folder.path, identifiedAs: container) {
                    items.append(item)
                }
                next = index + 1
            }
            history.noteHandedOut(items.map(\.identifier))
            guard let index = next, index < names.count else { return ItemPage(items: items, nextPage: nil) }
            return ItemPage(items: items, nextPage: try EnumerationPage(Self.marker + names[index - 1].bytes))
        }
    }

    func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
        throw ProviderError.featureUnsupported
    }

    func currentSyncAnchor() async throws -> SyncAnchor? { nil }

    private static let marker: [UInt8] = [UInt8(ascii: "n")]

    /// The name a page continues after; nil for the initial page.
    private static func lastName(in page: EnumerationPage) throws -> Filename? {
        if page.isInitial { return nil }
        let name = Filename(bytes: Array(page.bytes.dropFirst()))
        guard page.bytes.starts(with: marker), name.isValid else { throw ProviderError.pageExpired }
        return name
    }
}
