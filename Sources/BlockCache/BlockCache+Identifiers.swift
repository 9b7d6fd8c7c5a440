import FileProviderKit
import Foundation
import MetadataStore

extension BlockCache {
    /// Gives cached contents the identifiers their items now have. On a remote whose identifiers
    /// are places, a move gives the item (and every item below a moved folder) a new one, which
    /// `rename` tells from the old; the store's rows follow it (`MetadataStore
    /// .completeModification`, `rebaseIdentifiers`), and so must what this cache keeps in memory,
    /// or the item's bytes would be fetched again under the new identifier, and a handle open on
    /// them would ask under one the remote no longer knows (DECISIONS 303). A row written after the
    /// store followed the move (`beginContent` writes it in the background) is renamed here. A
    /// content whose row the store replaced loses its file (a handle reading it keeps its
    /// descriptor); one whose row the store gave another identifier (an item with local work that
    /// held the new one) takes that.
    public func followIdentifiers(renaming rename: (ItemIdentifier) -> ItemIdentifier?) async throws {
        try await follow { records in
            var renamed: [ItemIdentifier: ItemIdentifier] = [:]
            for identifier in records.keys {
                if let new = rename(identifier) { renamed[identifier] = new }
            }
            return renamed
        }
    }

    /// `followIdentifiers` for one item, which took `new` in place of `old`: without a look at
    /// every cached content, since it comes after every upload of a new item.
    public func followIdentifier(_ old: ItemIdentifier, to new: ItemIdentifier) async throws {
        try await follow { records in records[old] == nil ? [:] : [old: new] }
    }

    /// Follows the renames `renaming` finds among the cached contents (by identifier).
    private func follow(
        renaming: ([ItemIdentifier: ContentRecord]) -> [ItemIdentifier: ItemIdentifier]
    ) async throws {
        let (olds, renamed, rowsBeingWritten) = state.withLock { state in
            var olds: [ItemIdentifier] = []
            var renamed: [Int64: ItemIdentifier] = [:]
            for (old, new) in renaming(state.records) {
                guard let record = state.records[old] else { continue }
                olds.append(old)
                renamed[record.fileNumber] = new
            }
            return (olds, renamed, renamed.keys.compactMap { state.rowsBeingWritten[$0] })
        }
        guard !renamed.isEmpty else { return }
        for row in rowsBeingWritten { _ = try? await row.value }
        try await store.renameContents(renamed)
        // The renamed contents, and those that held a new identifier (the store replaced their
        // rows, or gave them another identifier).
        let affected = Set(olds + renamed.values)
        let candidates = state.withLock { state in Set(affected.compactMap { state.records[$0]?.fileNumber }) }
        let stored = try await store.contentIdentifiers(fileNumbers: Array(candidates))
        let dropped = state.withLock { state -> [ContentRecord] in
            var moved: [(record: ContentRecord, content: CachedContent?, used: Bool)] = []
            var dropped: [ContentRecord] = []
            for identifier in affected {
                guard let record = state.records[identifier], candidates.contains(record.fileNumber) else { continue }
                let now = stored[record.fileNumber]
                guard now != identifier else { continue }
                let content = state.open[identifier]?.content.flatMap { $0.fileNumber == record.fileNumber ? $0 : nil }
                if content != nil { state.open[identifier] = nil }
                let used = state.usedSinceSaved.remove(identifier) != nil
                state.setRecord(nil, of: identifier)
                guard let now else {
                    dropped.append(record)
                    continue
                }
                var renamed = record
                renamed.identifier = now
                moved.append((renamed, content, used))
            }
            for (record, content, used) in moved {
                state.setRecord(record, of: record.identifier)
                if used { state.usedSinceSaved.insert(record.identifier) }
                if let content {
                    content.follow(record.identifier)
                    state.open[record.identifier] = OpenContent(content: content)
                }
            }
            return dropped
        }
        for record in dropped {
            let path = directory.appending(String(record.fileNumber))
            _ = try? await BlockingIO.run { try FileManager.default.removeItem(atPath: path.string) }
        }
    }
}
