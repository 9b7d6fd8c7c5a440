import FileProviderKit
import Foundation

/// The content half: whole, partial and incremental fetches share one path that records the call,
/// counts it in flight, waits while fetches are held and then the configured delay, and writes in
/// chunks while checking for cancellation. The remote keeps only the newest contents, so an older
/// version yields the newer item and bytes, or `versionNoLongerAvailable` under
/// `.strictVersioning`.
extension InMemoryProvider {
    public func fetchContents(for identifier: ItemIdentifier, version: ItemVersion?, into sink: any ContentSink)
        async throws -> Item
    {
        try await serve(RecordedCall(operation: .fetchContents, identifier: identifier), into: sink) { item in
            0..<item.size
        }.item
    }

    public func fetchPartialContents(
        for identifier: ItemIdentifier, version: ItemVersion, minimalRange: Range<UInt64>,
        aligningTo alignment: UInt64, options: PartialFetchOptions, into sink: any ContentSink
    ) async throws -> PartialFetchResult {
        let call = RecordedCall(operation: .fetchPartialContents, identifier: identifier, range: minimalRange)
        guard alignment > 0 else { throw ProviderError.cannotSynchronize(reason: "alignment must be positive") }
        let strict = options.contains(.strictVersioning) ? version : nil
        let (item, range) = try await serve(call, strictVersion: strict, into: sink) { item in
            PartialFetchResult.alignedRange(covering: minimalRange, alignment: alignment, size: item.size)
        }
        return PartialFetchResult(retrievedRange: range, item: item)
    }

    public func fetchContents(
        for identifier: ItemIdentifier, version: ItemVersion?, usingExistingContentsAt existingContents: URL,
        existingVersion: ItemVersion, into sink: any ContentSink
    ) async throws -> Item {
        let existing = try await BlockingIO.read(existingContents)
        let call = RecordedCall(operation: .fetchIncrementalContents, identifier: identifier)
        return try await serve(call, reusing: existing, into: sink) { item in 0..<item.size }.item
    }

    /// Writes `range(item)` of a file into `sink`. Chunks equal to the same bytes of `existing` are
    /// written from there and not counted as served, as an incremental fetch would skip them.
    private func serve(
        _ call: RecordedCall, strictVersion: ItemVersion? = nil, reusing existing: [UInt8]? = nil,
        into sink: any ContentSink, range: (Item) -> Range<UInt64>
    ) async throws -> (item: Item, range: Range<UInt64>) {
        recorder.record(call)
        defer { recorder.fetchFinished() }
        let settings = configuration
        await waitWhileFetchesHeld()
        if let delay = settings.fetchDelay { try await Task.sleep(for: delay) }
        let identifier = call.identifier ?? .rootContainer
        let (item, contents) = try withTree { tree throws(ProviderError) in
            let node = try tree.node(identifier)
            guard node.item.kind == .file else { throw .cannotSynchronize(reason: "\(identifier) is not a file") }
            if let strictVersion, strictVersion.content != node.item.version.content { throw .versionNoLongerAvailable }
            return (node.item, node.contents)
        }
        let retrieved = range(item)
        var offset = retrieved.lowerBound
        while offset < retrieved.upperBound {
            try Task.checkCancellation()
            let end = min(offset + UInt64(max(1, settings.writeChunkSize)), retrieved.upperBound)
            let piece = contents[Int(offset)..<Int(end)]
            if settings.writesWithoutSuspending {
                try await Self.writeWithoutSuspending(piece, at: offset, into: sink)
            } else {
                try await sink.write(piece, at: offset)
            }
            // Bytes the local copy already had did not cross the network.
            let reused = existing.map { $0.count >= Int(end) && $0[Int(offset)..<Int(end)] == piece } ?? false
            if !reused { recorder.served(piece.count) }
            offset = end
        }
        return (item, retrieved)
    }

    /// Writes `piece` as an event loop would, and waits only while the sink holds it back.
    private static func writeWithoutSuspending(
        _ piece: ArraySlice<UInt8>, at offset: UInt64, into sink: any ContentSink
    )
        async throws
    {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            do {
                let takesMore = try sink.write(piece, at: offset) { error in
                    if let error { continuation.resume(throwing: error) } else { continuation.resume() }
                }
                if takesMore { continuation.resume() }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}
