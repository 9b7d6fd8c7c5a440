import FileProviderKit
import Foundation
import Synchronization

/// A sink that keeps every write, to check what a fetch delivered and in which order.
final class CollectingSink: ContentSink {
    private let writes = Mutex<[(offset: UInt64, bytes: [UInt8])]>([])

    func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws {
        let copy = bytes.withUnsafeBytes { Array($0) }
        writes.withLock { $0.append((offset, copy)) }
    }

    /// The offsets written, in the order they came.
    var offsets: [UInt64] { writes.withLock { $0.map(\.offset) } }

    /// The bytes written from `start` on, provided the writes were contiguous and in order.
    func contents(from start: UInt64 = 0) -> [UInt8]? {
        writes.withLock { writes in
            var result: [UInt8] = []
            for write in writes {
                guard write.offset == start + UInt64(result.count) else { return nil }
                result += write.bytes
            }
            return result
        }
    }
}
