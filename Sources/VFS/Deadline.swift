import Synchronization

/// When the remote last made progress, shared between a fetch's sink and its watchdog.
final class ProgressMark: Sendable {
    private let last = Mutex(ContinuousClock.now)

    func touch() { last.withLock { $0 = .now } }
    var lastProgress: ContinuousClock.Instant { last.withLock { $0 } }
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
