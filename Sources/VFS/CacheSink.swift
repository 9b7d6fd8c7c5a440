import BlockCache
import FileProviderKit
import Foundation

/// The sink a provider writes fetched bytes into: straight into the cached content, waking readers
/// as their bytes land, and marking progress for the fetch's watchdog.
struct CacheSink: ContentSink {
    let content: CachedContent
    let progress: ProgressMark
    let statistics: Statistics

    func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws {
        try Task.checkCancellation()
        try await content.write(bytes, at: offset)
        let count = bytes.withUnsafeBytes { UInt64($0.count) }
        statistics.update { $0.fetches.bytes += count }
        progress.touch()
    }
}
