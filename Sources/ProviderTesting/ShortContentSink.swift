import FileProviderKit
import Foundation
import Synchronization

/// Passes on only the first `limit` bytes a fetch writes and silently drops the rest, so the
/// fetch returns normally with less content than the item's size: a truncated download.
final class ShortContentSink: ContentSink {
    private let inner: any ContentSink
    private let remaining: Mutex<UInt64>

    init(inner: any ContentSink, limit: UInt64) {
        self.inner = inner
        remaining = Mutex(limit)
    }

    /// `sink` cut short when the faults ask for it, `sink` itself otherwise.
    static func applying(_ faults: FaultInjector.ContentFaults, to sink: any ContentSink) -> any ContentSink {
        faults.shortBytes.map { ShortContentSink(inner: sink, limit: $0) } ?? sink
    }

    func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws {
        let copy = bytes.withUnsafeBytes { Array($0) }
        let allowed = remaining.withLock { remaining in
            let allowed = min(remaining, UInt64(copy.count))
            remaining -= allowed
            return Int(allowed)
        }
        if allowed > 0 { try await inner.write(copy[..<allowed], at: offset) }
    }

    func describe(_ item: Item) async { await inner.describe(item) }
}
