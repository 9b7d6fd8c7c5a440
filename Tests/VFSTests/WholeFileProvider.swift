import FileProviderKit
import Foundation

/// Presents any provider as one without partial fetches, to test the whole-file read path.
struct WholeFileProvider: FileProvider {
    let inner: any FileProvider

    func item(for identifier: ItemIdentifier) async throws -> Item { try await inner.item(for: identifier) }
    func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator {
        try await inner.enumerator(for: container)
    }
    func fetchContents(for identifier: ItemIdentifier, version: ItemVersion?, into sink: any ContentSink)
        async throws -> Item
    { try await inner.fetchContents(for: identifier, version: version, into: sink) }
    func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
        async throws -> Item
    { try await inner.createItem(basedOn: template, fields: fields, contents: contents, options: options) }
    func modifyItem(
        _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?, options: ModifyItemOptions
    ) async throws -> Item {
        try await inner.modifyItem(
            item, baseVersion: baseVersion, changedFields: changedFields, contents: contents, options: options)
    }
    func deleteItem(identifier: ItemIdentifier, baseVersion: ItemVersion?, options: DeleteItemOptions) async throws {
        try await inner.deleteItem(identifier: identifier, baseVersion: baseVersion, options: options)
    }
    func invalidate() async { await inner.invalidate() }
}
