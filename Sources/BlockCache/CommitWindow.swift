import Dispatch
import Synchronization

/// How long a commit waits before its store transaction, so that the commits of fetches ending
/// meanwhile join it (DECISIONS 123, 143): `length`, or until `byteLimit` bytes have been fetched,
/// whichever comes first — a scattered reader shares one commit between many reads, a streaming
/// one does not leave much more than `byteLimit` unrecorded (fetched again after a kill -9).
/// Hurrying ends the waits under way (eviction right after a read); closing also keeps later ones
/// from starting (unmount): a long window delays neither.
public final class CommitWindow: Sendable {
    /// How long one wait lasts at most.
    public let length: Duration
    /// The bytes fetched while waiting that end the waits.
    public let byteLimit: UInt64

    private struct State {
        var isClosed = false
        var fetchedBytes: UInt64 = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    public init(length: Duration, byteLimit: UInt64) {
        self.length = length
        self.byteLimit = byteLimit
    }

    /// Returns after `length`, or sooner (see the type). Uses a timer rather than a task of its
    /// own, as it runs once per commit.
    func wait() async {
        guard length > .zero else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiter = state.withLock { state -> UInt64? in
                guard !state.isClosed else { return nil }
                state.nextWaiter += 1
                state.waiters[state.nextWaiter] = continuation
                return state.nextWaiter
            }
            guard let waiter else { return continuation.resume() }
            let (seconds, attoseconds) = length.components
            let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
                state.withLock { $0.waiters.removeValue(forKey: waiter) }?.resume()
            }
        }
    }

    /// The waits under way (for tests).
    var waitCount: Int { state.withLock { $0.waiters.count } }

    /// Counts `bytes` fetched; ends the waits under way once `byteLimit` have been since the last
    /// time they were ended.
    public func noteFetched(_ bytes: UInt64) {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.fetchedBytes += bytes
            guard state.fetchedBytes >= byteLimit else { return [] }
            return Self.takeWaiters(from: &state)
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Ends the waits under way now.
    public func hurry() {
        let waiting = state.withLock { Self.takeWaiters(from: &$0) }
        for continuation in waiting { continuation.resume() }
    }

    /// Ends every wait now, and every later one at once.
    public func close() {
        let waiting = state.withLock { state in
            state.isClosed = true
            return Self.takeWaiters(from: &state)
        }
        for continuation in waiting { continuation.resume() }
    }

    private static func takeWaiters(from state: inout State) -> [CheckedContinuation<Void, Never>] {
        state.fetchedBytes = 0
        defer { state.waiters.removeAll() }
        return Array(state.waiters.values)
    }
}
