import Dispatch

/// Runs blocking file-system work off Swift's cooperative thread pool.
///
/// A stalled disk or a hung network share must not starve every other task of the process, so
/// each blocking call hops to a concurrent Dispatch queue, whose threads may block, and the caller
/// awaits the result.
enum BlockingIO {
    private static let queue = DispatchQueue(label: "fpfs.LocalProvider.io", attributes: .concurrent)

    static func run<Result: Sendable>(_ work: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Swift.Result { try work() }) }
        }
    }
}
