import FileProviderKit
import Foundation

/// Stands in for a remote that cannot be reached at mount time when the cache already holds its
/// state: the mount serves what is local, and everything that needs the remote fails at once with
/// `serverUnreachable` (EHOSTDOWN), as ARCHITECTURE §5 asks of offline mounts.
struct OfflineProvider: FileProvider {
    let reason: String

    private var unreachable: ProviderError { .serverUnreachable(reason: reason) }

    func item(for identifier: ItemIdentifier) async throws -> Item { throw unreachable }
    func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator { throw unreachable }
    func fetchContents(for identifier: ItemIdentifier, version: ItemVersion?, into sink: any ContentSink)
        async throws -> Item
    { throw unreachable }
    func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
        async throws -> Item
    { throw unreachable }
    func modifyItem(
        _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?, options: ModifyItemOptions
    ) async throws -> Item { throw unreachable }
    func deleteItem(identifier: ItemIdentifier, baseVersion: ItemVersion?, options: DeleteItemOptions) async throws {
        throw unreachable
    }
    func invalidate() async {}
}
