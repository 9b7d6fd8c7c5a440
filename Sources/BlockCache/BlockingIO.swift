import Dispatch

/// Runs blocking system calls (pread, pwrite, fsync, open) off Swift's cooperative threads, on
/// Dispatch's pool, which may grow a thread while one blocks.
public enum BlockingIO {
    private static let queue = DispatchQueue(label: "fpfs.blocking-io", qos: .userInitiated, attributes: .concurrent)

    /// Runs `work` on the blocking-I/O queue and returns its result.
    public static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }
}
