import Dispatch

/// Runs blocking system calls (file I/O, fsync, directory walks) off Swift's cooperative threads.
///
/// Providers and the engine must never block a cooperative thread: a stalled disk or a hung
/// network share would starve every other task of the process. Work handed to `run` executes on a
/// concurrent Dispatch queue and the caller awaits the result. The queue's pool starts with a
/// thread per core and, on Linux, adds about one a second while all of its threads block: with
/// eight calls asleep, a ninth waited 7 s on this project's two-core machine. Work that must
/// not wait behind such calls belongs on a thread of its own.
public enum BlockingIO {
    private static let queue = DispatchQueue(label: "fpfs.blocking-io", qos: .userInitiated, attributes: .concurrent)

    /// Runs `work` on the blocking-I/O queue and returns its result (or rethrows its error).
    public static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Starts `work` on the blocking-I/O queue without waiting for it: for a writer that keeps
    /// running there while work arrives, and reports through its own state.
    public static func start(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }
}
