import FileProviderKit
import Synchronization

/// Counts what a provider was asked to do, so tests can assert on the engine's behaviour — how
/// many fetches, which ranges, how many bytes, how many fetches ran at once — rather than on
/// timing.
public final class CallRecorder: Sendable {
    private struct State {
        var calls: [RecordedCall] = []
        var counts: [ProviderOperation: Int] = [:]
        var bytesServed: UInt64 = 0
        var fetchesInFlight = 0
        var maximumFetchesInFlight = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Every call so far, oldest first.
    public var calls: [RecordedCall] { state.withLock { $0.calls } }

    /// How many times `operation` was called.
    public func count(_ operation: ProviderOperation) -> Int { state.withLock { $0.counts[operation, default: 0] } }

    /// Calls of `operation`, oldest first.
    public func calls(of operation: ProviderOperation) -> [RecordedCall] {
        state.withLock { $0.calls.filter { $0.operation == operation } }
    }

    /// Bytes the remote wrote into sinks (bytes an incremental fetch took from the local copy are
    /// not counted: they did not cross the network).
    public var bytesServed: UInt64 { state.withLock { $0.bytesServed } }

    /// Content fetches running now.
    public var fetchesInFlight: Int { state.withLock { $0.fetchesInFlight } }

    /// The most content fetches that ever ran at once: what pipeline-depth tests check.
    public var maximumFetchesInFlight: Int { state.withLock { $0.maximumFetchesInFlight } }

    /// Forgets everything recorded, e.g. after a test's setup; fetches in flight stay counted.
    public func reset() {
        state.withLock {
            let inFlight = $0.fetchesInFlight
            $0 = State()
            $0.fetchesInFlight = inFlight
            $0.maximumFetchesInFlight = inFlight
        }
    }

    /// Notes a call; for content fetches the caller must pair it with `fetchFinished()`.
    public func record(_ call: RecordedCall) {
        state.withLock {
            $0.calls.append(call)
            $0.counts[call.operation, default: 0] += 1
            if call.operation.isContentFetch {
                $0.fetchesInFlight += 1
                $0.maximumFetchesInFlight = max($0.maximumFetchesInFlight, $0.fetchesInFlight)
            }
        }
    }

    /// Ends a content fetch started by `record`.
    public func fetchFinished() { state.withLock { $0.fetchesInFlight -= 1 } }

    /// Adds bytes written into a sink.
    public func served(_ byteCount: Int) { state.withLock { $0.bytesServed += UInt64(byteCount) } }
}
