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
    /// Guards what this fetch wrote, and whether the fetch has ended (later writes are refused).
    private let state = Mutex((written: ByteRanges(), isClosed: false))

    init(content: CachedContent, progress: ProgressMark, statistics: Statistics, download: UInt64) {
        self.content = content
        self.progress = progress
        self.statistics = statistics
        self.download = download
    }

    /// The bytes this fetch has written.
    var written: ByteRanges { state.withLock { $0.written } }

    /// Ends the fetch: from now on writes are refused and make nothing present, even from a
    /// provider that ignored cancellation and is still running.
    func close() { state.withLock { $0.isClosed = true } }

    func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws {
        try Task.checkCancellation()
        let count = bytes.withUnsafeBytes { UInt64($0.count) }
        try await content.write(bytes, at: offset) {
            state.withLock { state in
                guard !state.isClosed else { return false }
                state.written.insert(offset..<offset + count)
                return true
            }
        }
        statistics.fetchProgressed(download, bytes: count)
        progress.touch()
    }
}
