import BlockCache
import FileProviderKit
import Foundation
import Synchronization

/// The sink a provider writes fetched bytes into: straight into the cached content, waking readers
/// as their bytes land, marking progress for the fetch's watchdog, and remembering what this fetch
/// wrote so that it can be checked, or forgotten if the fetch turns out wrong.
final class CacheSink: ContentSink {
    let content: CachedContent
    let progress: ProgressMark
    let statistics: Statistics
    let download: UInt64
    private let writtenRanges = Mutex(ByteRanges())

    init(content: CachedContent, progress: ProgressMark, statistics: Statistics, download: UInt64) {
        self.content = content
        self.progress = progress
        self.statistics = statistics
        self.download = download
    }

    /// The bytes this fetch has written.
    var written: ByteRanges { writtenRanges.withLock { $0 } }

    func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws {
        try Task.checkCancellation()
        try await content.write(bytes, at: offset)
        let count = bytes.withUnsafeBytes { UInt64($0.count) }
        writtenRanges.withLock { $0.insert(offset..<offset + count) }
        statistics.fetchProgressed(download, bytes: count)
        progress.touch()
    }
}
