import FileProviderKit

/// Helpers that drive enumerators the way the engine does.
enum Enumeration {
    /// Every item of a listing, page by page, checking each page token's size.
    static func allItems(of enumerator: any ItemEnumerator, pageSize: Int) async throws -> [Item] {
        var items: [Item] = []
        var page = EnumerationPage.initial
        while true {
            let result = try await enumerator.enumerateItems(startingAt: page, suggestedPageSize: pageSize)
            items += result.items
            guard let next = result.nextPage else { return items }
            precondition(next.bytes.count <= EnumerationPage.maximumLength)
            page = next
        }
    }

    /// Every change since `anchor`, batch by batch, and the anchor after the last batch.
    static func allChanges(of enumerator: any ItemEnumerator, from anchor: SyncAnchor, pageSize: Int = 100)
        async throws -> (updated: [Item], deleted: [ItemIdentifier], anchor: SyncAnchor)
    {
        var updated: [Item] = []
        var deleted: [ItemIdentifier] = []
        var anchor = anchor
        while true {
            let batch = try await enumerator.enumerateChanges(from: anchor, suggestedPageSize: pageSize)
            updated += batch.updated
            deleted += batch.deleted
            anchor = batch.nextAnchor
            if !batch.moreComing { return (updated, deleted, anchor) }
        }
    }
}

extension FileProvider {
    /// The children of a folder, all pages.
    func children(of folder: ItemIdentifier, pageSize: Int = 100) async throws -> [Item] {
        try await Enumeration.allItems(of: enumerator(for: folder), pageSize: pageSize)
    }

    /// The child of `folder` named `name`.
    func child(_ name: String, of folder: ItemIdentifier = .rootContainer) async throws -> Item? {
        try await children(of: folder).first { $0.filename == Filename(name) }
    }
}
