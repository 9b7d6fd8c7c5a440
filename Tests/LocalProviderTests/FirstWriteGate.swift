import FileProviderKit
import Foundation
import Synchronization

/// A sink that holds a fetch's first write until the test releases it, so a test can act at a
/// known point of a fetch instead of guessing with sleeps, which a loaded machine defeats.
final class FirstWriteGate: ContentSink {
    private let arrivals: AsyncStream<Void>
    private let arrival: AsyncStream<Void>.Continuation
    private let releases: AsyncStream<Void>
    private let releaser: AsyncStream<Void>.Continuation
    private let writes = Mutex(0)

    init() {
        (arrivals, arrival) = AsyncStream.makeStream()
        (releases, releaser) = AsyncStream.makeStream()
    }

    func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws {
        let isFirst = writes.withLock { count in
            count += 1
            return count == 1
        }
        guard isFirst else { return }
        arrival.yield()
        for await _ in releases { break }
    }

    /// Returns once the fetch has handed over its first bytes.
    func firstWriteArrived() async {
        for await _ in arrivals { break }
    }

    /// Lets the held first write, and all after it, through.
    func release() { releaser.yield() }

    /// How many writes the fetch made.
    var writeCount: Int { writes.withLock { $0 } }
}
