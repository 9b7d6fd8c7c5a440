import Synchronization

/// When the remote last made progress, shared between a fetch's sink and its watchdog.
///
/// Progress is bytes at a rate, not any byte: the mark moves only when the bytes received since
/// it last moved came at `minimumRate` or faster over that time. A remote that trickles (one byte
/// every two seconds) never moves it, and fails the call after the remote bound as one that sends
/// nothing does; a slow but working link moves it with each of its first pieces (DECISIONS 184).
final class ProgressMark: Sendable {
    /// Bytes per second below which a transfer counts as stalled: 1 KiB/s, far below any link a
    /// mount is usable over, far above a hostile trickle.
    static let minimumRate = 1024.0

    private struct State {
        var last = ContinuousClock.now
        var bytesSince = 0.0
    }
    private let state = Mutex(State())

    /// `count` bytes arrived.
    func touch(bytes count: UInt64) {
        let now = ContinuousClock.now
        state.withLock { state in
            state.bytesSince += Double(count)
            if state.bytesSince >= Self.minimumRate * ((now - state.last) / .seconds(1)) {
                state.last = now
                state.bytesSince = 0
            }
        }
    }

    var lastProgress: ContinuousClock.Instant { state.withLock { $0.last } }
}

/// Runs provider calls under the remote bound.
///
/// The operation runs in a task of its own and the caller is answered by whichever comes first:
/// the operation, or the process's `RemoteWatch` seeing no progress for `limit`. The caller never
/// waits on a provider that ignores cancellation; the stray task is cancelled and left to finish.
enum Deadline {
    static func run<T: Sendable>(
        limit: Duration, progress: ProgressMark = ProgressMark(),
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome = Outcome<T>()
        let work = Task { outcome.finish(with: await Result { try await operation() }) }
        let watched = RemoteWatch.shared.watch(progress, limit: limit) {
            outcome.finish(with: .failure(RemoteTimeout(limit: limit)))
        }
        defer {
            work.cancel()
            RemoteWatch.shared.stopWatching(watched)
        }
        return try await withTaskCancellationHandler {
            try await outcome.value
        } onCancel: {
            outcome.finish(with: .failure(CancellationError()))
        }
    }
}

/// A result delivered once to one waiter, whoever produces it first.
private final class Outcome<T: Sendable>: Sendable {
    private struct State {
        var result: Result<T, any Error>?
        var waiter: CheckedContinuation<T, any Error>?
    }
    private let state = Mutex(State())

    func finish(with result: Result<T, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }

    var value: T {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<T, any Error>? in
                    if let result = state.result { return result }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        }
    }
}

extension Result where Failure == any Error {
    /// Captures the outcome of an async throwing call.
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
