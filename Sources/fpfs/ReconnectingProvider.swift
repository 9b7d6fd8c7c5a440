import FileProviderKit
import Foundation
import Synchronization

/// Stands in for a remote that cannot be reached at mount time (a folder remote whose folder is
/// missing, say on a disk not yet mounted) until it can: the mount serves what is local, every
/// call that needs the remote fails at once with `serverUnreachable` (EHOSTDOWN, as ARCHITECTURE §5
/// asks of offline mounts), and the first call that finds the remote back makes the real provider
/// and goes on with it. A start without the remote was final before: that mount never reached the
/// folder again, even once it was back (DECISIONS 271).
///
/// It has the optional capabilities of the provider it makes (partial fetches, features), which
/// the engine looks for with `as?` once, at start.
final class ReconnectingProvider<Remote: FileProvider>: FileProvider {
    /// Why the remote cannot be reached now (nil: it can), and the real provider for it.
    private let reachability: @Sendable () throws -> String?
    private let connect: @Sendable () throws -> Remote
    private let connected = Mutex<Remote?>(nil)

    init(reachability: @escaping @Sendable () throws -> String?, connect: @escaping @Sendable () throws -> Remote) {
        self.reachability = reachability
        self.connect = connect
    }

    /// The real provider, made by the first call that finds the remote reachable. Blocks briefly
    /// (a `stat` of the folder) on the caller's thread, as the folder provider's own calls do.
    private func provider() throws -> Remote {
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

extension ReconnectingProvider: PartialContentFetching where Remote: PartialContentFetching {
    func fetchPartialContents(
        for identifier: ItemIdentifier, version: ItemVersion, minimalRange: Range<UInt64>,
        aligningTo alignment: UInt64, options: PartialFetchOptions, into sink: any ContentSink
    ) async throws -> PartialFetchResult {
        try await provider().fetchPartialContents(
            for: identifier, version: version, minimalRange: minimalRange, aligningTo: alignment, options: options,
            into: sink)
    }
}

/// Until the remote is reached, every feature, as the engine assumes of a provider that does not
/// describe its own, and any name.
extension ReconnectingProvider: FeatureDescribing where Remote: FeatureDescribing {
    var features: ProviderFeatures { connected.withLock { $0 }?.features ?? .all }

    func reasonItCannotHold(name: Filename, in parent: ItemIdentifier) -> String? {
        connected.withLock { $0 }?.reasonItCannotHold(name: name, in: parent)
    }
}
