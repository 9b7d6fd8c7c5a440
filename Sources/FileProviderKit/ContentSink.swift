import Foundation

/// Where a provider writes the contents it fetches: bytes at offsets of the item's content.
///
/// The engine's sink writes straight into the block cache and wakes readers whose bytes have
/// landed, so a provider should write as it receives, in order where it can. Writes of one fetch
/// must not overlap; a write after the fetch call has returned is an error.
public protocol ContentSink: Sendable {
    /// Stores `bytes` at `offset` of the item's content. Throws when the engine no longer wants the
    /// data (the fetch was cancelled or the disk is full): the provider then stops and rethrows.
    func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws

    /// Stores `bytes` at `offset` without suspending, for a provider that receives on a thread of
    /// its own which must not wait (a network event loop): the bytes then reach the cache without a
    /// hop to a task. Returns true when the sink takes more at once; false when it holds the
    /// provider back, and then calls `resume` once, with nil when it takes more or with the error
    /// that ended the fetch. The provider sends no further write before that. Throws as `write`
    /// does.
    func write(
        _ bytes: some ContiguousBytes & Sendable, at offset: UInt64,
        resume: @escaping @Sendable ((any Error)?) -> Void
    ) throws -> Bool

    /// Tells the engine the item as the answer carrying the contents describes it, before the
    /// first byte: a remote whose reads bring metadata its listings lack (S3's `x-amz-meta-*`)
    /// then shows it from that read on, without a request of its own (DECISIONS 263). The engine
    /// takes it for the version being fetched only.
    func describe(_ item: Item) async
}

extension ContentSink {
    /// A sink without a path of its own for this takes the bytes through `write(_:at:)` in a task.
    public func write(
        _ bytes: some ContiguousBytes & Sendable, at offset: UInt64,
        resume: @escaping @Sendable ((any Error)?) -> Void
    ) throws -> Bool {
        Task {
            do {
                try await write(bytes, at: offset)
                resume(nil)
            } catch {
                resume(error)
            }
        }
        return false
    }

    /// A sink that takes no description ignores it.
    public func describe(_ item: Item) async {}
}
