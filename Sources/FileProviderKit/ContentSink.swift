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
}
