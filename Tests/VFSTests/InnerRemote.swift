import FileProviderKit
import Foundation
import ProviderTesting

/// A test remote that passes what it does not change of the FileProvider calls on to `inner`.
protocol InnerRemote: FileProvider {
    var inner: InMemoryProvider { get }
}

extension InnerRemote {
    func item(for identifier: ItemIdentifier) async throws -> Item { try await inner.item(for: identifier) }
    func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator {
        try await inner.enumerator(for: container)
    }
    func fetchContents(for identifier: ItemIdentifier, version: ItemVersion?, into sink: any ContentSink)
        async throws -> Item
    {
        try await inner.fetchContents(for: identifier, version: version, into: sink)
    }
    func deleteItem(identifier: ItemIdentifier, baseVersion: ItemVersion?, options: DeleteItemOptions) async throws {
        try await inner.deleteItem(identifier: identifier, baseVersion: baseVersion, options: options)
    }
    func invalidate() async {}
}
