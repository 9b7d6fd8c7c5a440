import FileProviderKit
import Foundation

/// Wraps any provider and makes its calls fail, hang, slow down or return short content as the
/// rules of a `FaultInjector` say, so tests (and `fpfs mount --inject-faults`) can see how the
/// engine copes with a misbehaving remote.
///
/// It conforms to `PartialContentFetching` and `IncrementalContentFetching` exactly when the
/// wrapped provider does, so the engine's `as?` checks see the same capabilities. To wrap an
/// `any FileProvider`, use `FaultInjector.wrap(_:)`.
public struct FaultInjectingProvider<Inner: FileProvider>: FileProvider {
    public let inner: Inner
    public let injector: FaultInjector

    public init(wrapping inner: Inner, injector: FaultInjector) {
        self.inner = inner
        self.injector = injector
    }

    public func item(for identifier: ItemIdentifier) async throws -> Item {
        _ = try await intercept(.item, identifier)
        return try await learned(inner.item(for: identifier))
    }

    public func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator {
        FaultInjectingEnumerator(
            inner: try await inner.enumerator(for: container), container: container, provider: self)
    }

    public func fetchContents(for identifier: ItemIdentifier, version: ItemVersion?, into sink: any ContentSink)
        async throws -> Item
    {
        let faults = try await intercept(.fetch, identifier)
        return try await learned(
            inner.fetchContents(for: identifier, version: version, into: ShortContentSink.applying(faults, to: sink)))
    }

    public func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
        async throws -> Item
    {
        _ = try await intercept(.create, template.identifier, filenames: [template.filename])
        let created = try await inner.createItem(basedOn: template, fields: fields, contents: contents, options: options)
        _ = try await intercept(.create, template.identifier, filenames: [template.filename], afterCall: true)
        return learned(created)
    }

    public func modifyItem(
        _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?, options: ModifyItemOptions
    ) async throws -> Item {
        _ = try await intercept(.modify, item.identifier, filenames: [item.filename])
        let modified = try await inner.modifyItem(
            item, baseVersion: baseVersion, changedFields: changedFields, contents: contents, options: options)
        _ = try await intercept(.modify, item.identifier, filenames: [item.filename], afterCall: true)
        return learned(modified)
    }

    public func deleteItem(identifier: ItemIdentifier, baseVersion: ItemVersion?, options: DeleteItemOptions)
        async throws
    {
        _ = try await intercept(.delete, identifier)
        try await inner.deleteItem(identifier: identifier, baseVersion: baseVersion, options: options)
        _ = try await intercept(.delete, identifier, afterCall: true)
    }

    public func invalidate() async { await inner.invalidate() }

    /// Runs the injector's rules for a call, looking the item's name up in `inner` if a rule needs it.
    func intercept(
        _ operation: FaultRule.Operation, _ identifier: ItemIdentifier, filenames: [Filename] = [],
        afterCall: Bool = false
    ) async throws -> FaultInjector.ContentFaults {
        try await injector.intercept(operation, identifier: identifier, filenames: filenames, afterCall: afterCall) {
            try? await inner.item(for: identifier)
        }
    }

    /// Passes an item through, learning its name for filename rules.
    func learned(_ item: Item) -> Item {
        injector.learn([item])
        return item
    }
}

extension FaultInjectingProvider: FeatureDescribing where Inner: FeatureDescribing {
    public var features: ProviderFeatures { inner.features }

    public func reasonItCannotHold(name: Filename, in parent: ItemIdentifier) -> String? {
        inner.reasonItCannotHold(name: name, in: parent)
    }

    public func reasonItCannotHold(attributes: [String: [UInt8]]) -> String? {
        inner.reasonItCannotHold(attributes: attributes)
    }
}

extension FaultInjectingProvider: PathIdentifying where Inner: PathIdentifying {
    public func identifierPrefix(below folder: ItemIdentifier) -> String? { inner.identifierPrefix(below: folder) }
}

extension FaultInjectingProvider: PartialContentFetching where Inner: PartialContentFetching {
    public func fetchPartialContents(
        for identifier: ItemIdentifier, version: ItemVersion, minimalRange: Range<UInt64>,
        aligningTo alignment: UInt64, options: PartialFetchOptions, into sink: any ContentSink
    ) async throws -> PartialFetchResult {
        let faults = try await intercept(.fetch, identifier)
        var result = try await inner.fetchPartialContents(
            for: identifier, version: version, minimalRange: minimalRange, aligningTo: alignment, options: options,
            into: ShortContentSink.applying(faults, to: sink))
        _ = learned(result.item)
        if faults.corruptRange {
            // One byte off: misaligned for any alignment above 1, and past the end when it ended there.
            result.retrievedRange = result.retrievedRange.lowerBound + 1..<result.retrievedRange.upperBound + 1
        }
        return result
    }
}

extension FaultInjectingProvider: IncrementalContentFetching where Inner: IncrementalContentFetching {
    public func fetchContents(
        for identifier: ItemIdentifier, version: ItemVersion?, usingExistingContentsAt existingContents: URL,
        existingVersion: ItemVersion, into sink: any ContentSink
    ) async throws -> Item {
        let faults = try await intercept(.fetch, identifier)
        return try await learned(
            inner.fetchContents(
                for: identifier, version: version, usingExistingContentsAt: existingContents,
                existingVersion: existingVersion, into: ShortContentSink.applying(faults, to: sink)))
    }
}
