import FileProviderKit
import Foundation
import Synchronization

/// Stands in for a remote that cannot be reached at mount time (a folder remote whose folder is
/// missing, say on a disk not yet mounted) until it can: the mount serves what is local, every
/// call that needs the remote fails at once with `serverUnreachable` (EHOSTDOWN, as ARCHITECTURE §5
/// asks of offline mounts), and the first call that finds the remote back makes the real provider
/// and goes on with it. A start without the remote was final before: that mount never reached the
/// folder again, even once it was back (DECISIONS 271).
final class ReconnectingProvider: FileProvider {
    /// Why the remote cannot be reached now (nil: it can), and the real provider for it.
    private let reachability: @Sendable () throws -> String?
    private let connect: @Sendable () throws -> any FileProvider
    private let connected = Mutex<(any FileProvider)?>(nil)

    init(
        reachability: @escaping @Sendable () throws -> String?,
        connect: @escaping @Sendable () throws -> any FileProvider
    ) {
        self.reachability = reachability
        self.connect = connect
    }

    /// The real provider, made by the first call that finds the remote reachable. Blocks briefly
    /// (a `stat` of the folder) on the caller's thread, as the folder provider's own calls do.
    private func provider() throws -> any FileProvider {
        if let provider = connected.withLock({ $0 }) { return provider }
        if let reason = try reachability() { throw ProviderError.serverUnreachable(reason: reason) }
        return try connected.withLock { connected in
            if let provider = connected { return provider }
            let provider = try connect()
            connected = provider
            return provider
        }
    }

    func item(for identifier: ItemIdentifier) async throws -> Item {
        try await provider().item(for: identifier)
    }

    func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator {
        try await provider().enumerator(for: container)
    }

    func fetchContents(for identifier: ItemIdentifier, version: ItemVersion?, into sink: any ContentSink)
        async throws -> Item
    {
        try await provider().fetchContents(for: identifier, version: version, into: sink)
    }

    func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
        async throws -> Item
    {
        try await provider().createItem(basedOn: template, fields: fields, contents: contents, options: options)
    }

    func modifyItem(
        _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?, options: ModifyItemOptions
    ) async throws -> Item {
        try await provider().modifyItem(
            item, baseVersion: baseVersion, changedFields: changedFields, contents: contents, options: options)
    }

    func deleteItem(identifier: ItemIdentifier, baseVersion: ItemVersion?, options: DeleteItemOptions) async throws {
        try await provider().deleteItem(identifier: identifier, baseVersion: baseVersion, options: options)
    }

    func invalidate() async {
        await connected.withLock({ $0 })?.invalidate()
    }
}
