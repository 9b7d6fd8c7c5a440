import FileProviderKit

#if canImport(Glibc)
    import Glibc
#endif

/// Lists a directory of `InMemoryProvider`, or everything for `.workingSet`, and reports the
/// working set's changes from the remote's change log.
///
/// Pages name the last key handed out (a filename, or an identifier for the working set), so a
/// listing neither repeats nor skips items that stay put while it runs. Pages and anchors carry
/// the remote's epoch, and pages its generation, so tokens from another instance, or from before
/// `expirePages()`, are refused.
struct InMemoryEnumerator: ItemEnumerator {
    let provider: InMemoryProvider
    let container: ItemIdentifier

    private static let pageTag: UInt8 = 0x50
    private static let anchorTag: UInt8 = 0x41

    func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int) async throws -> ItemPage {
        provider.recorder.record(RecordedCall(operation: .enumerateItems, identifier: container))
        let size = provider.pageSize(suggested: suggestedPageSize)
        let container = container
        return try provider.withTree { tree throws(ProviderError) in
            let after = try Self.cursor(in: page, of: tree)
            // Sort and cut keys first, and only then look up the page's items: cheap for long listings.
            let keyed: [([UInt8], ItemIdentifier)] =
                container == .workingSet
                ? tree.nodes.keys.filter { $0 != .rootContainer }.map { (Array($0.rawValue.utf8), $0) }
                : try tree.directory(container).children.map { ($0.key.bytes, $0.value) }
            let rest = keyed.filter { key, _ in after.map { Self.precedes($0, key) } ?? true }
                .sorted { Self.precedes($0.0, $1.0) }
            let chosen = rest.prefix(size)
            let items = chosen.compactMap { tree.nodes[$0.1]?.item }
            guard rest.count > size, let last = chosen.last else { return ItemPage(items: items, nextPage: nil) }
            return ItemPage(items: items, nextPage: Self.page(after: last.0, in: tree))
        }
    }

    func enumerateChanges(from anchor: SyncAnchor, suggestedPageSize: Int) async throws -> ChangeBatch {
        provider.recorder.record(RecordedCall(operation: .enumerateChanges, identifier: container))
        guard container == .workingSet, provider.configuration.supportsChangeEnumeration else {
            throw ProviderError.featureUnsupported
        }
        let size = provider.pageSize(suggested: suggestedPageSize)
        return try provider.withTree { tree throws(ProviderError) in
            let seen = try Self.sequence(in: anchor, of: tree)
            let batch = tree.changes.dropFirst(Int(seen - tree.trimmedThrough)).prefix(size)
            var updated: [Item] = []
            var deleted: [ItemIdentifier] = []
            var reported: Set<ItemIdentifier> = []
            for change in batch {
                let identifier: ItemIdentifier
                switch change {
                case .updated(let changed), .deleted(let changed): identifier = changed
                }
                guard reported.insert(identifier).inserted else { continue }
                // Report each item as it is now: a later change in the log will say the same again.
                if let node = tree.nodes[identifier] { updated.append(node.item) } else { deleted.append(identifier) }
            }
            let next = seen + UInt64(batch.count)
            return ChangeBatch(
                updated: updated, deleted: deleted, nextAnchor: Self.anchor(at: next, in: tree),
                moreComing: next < tree.sequence)
        }
    }

    func currentSyncAnchor() async throws -> SyncAnchor? {
        provider.recorder.record(RecordedCall(operation: .currentSyncAnchor, identifier: container))
        guard container == .workingSet, provider.configuration.supportsChangeEnumeration else { return nil }
        return try provider.withTree { tree in Self.anchor(at: tree.sequence, in: tree) }
    }

    // MARK: Tokens

    /// The key a page continues after, or nil for the initial page.
    private static func cursor(in page: EnumerationPage, of tree: RemoteTree) throws(ProviderError) -> [UInt8]? {
        if page.isInitial { return nil }
        let header = [pageTag] + bigEndian(tree.epoch) + bigEndian(tree.pageGeneration)
        guard page.bytes.starts(with: header) else { throw .pageExpired }
        return Array(page.bytes.dropFirst(header.count))
    }

    private static func page(after key: [UInt8], in tree: RemoteTree) -> EnumerationPage {
        // Keys are at most 255 bytes (a filename) or a short identifier: always within 500.
        try! EnumerationPage([pageTag] + bigEndian(tree.epoch) + bigEndian(tree.pageGeneration) + key)
    }

    /// The change sequence an anchor has seen, if the log still reaches back to it.
    private static func sequence(in anchor: SyncAnchor, of tree: RemoteTree) throws(ProviderError) -> UInt64 {
        let header = [anchorTag] + bigEndian(tree.epoch)
        guard anchor.bytes.count == header.count + 8, anchor.bytes.starts(with: header) else {
            throw .syncAnchorExpired
        }
        let seen = anchor.bytes.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard seen >= tree.trimmedThrough, seen <= tree.sequence else { throw .syncAnchorExpired }
        return seen
    }

    private static func anchor(at sequence: UInt64, in tree: RemoteTree) -> SyncAnchor {
        try! SyncAnchor([anchorTag] + bigEndian(tree.epoch) + bigEndian(sequence))
    }

    /// Byte order, with memcmp: the generic `lexicographicallyPrecedes` costs a debug build (the
    /// tests') seconds over long listings read in small pages.
    private static func precedes(_ left: [UInt8], _ right: [UInt8]) -> Bool {
        let common = min(left.count, right.count)
        let order =
            common == 0
            ? 0
            : left.withUnsafeBytes { l in right.withUnsafeBytes { r in memcmp(l.baseAddress!, r.baseAddress!, common) }
            }
        return order != 0 ? order < 0 : left.count < right.count
    }

    private static func bigEndian(_ value: some FixedWidthInteger) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }
}
