import Foundation

/// Runs file-system work on a thread of its own, so reading a `contents` URL or writing a fixture
/// never blocks a thread of Swift's cooperative pool.
enum BlockingIO {
    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result(catching: work)) }.start()
        }
    }

    /// The bytes of a file, or no bytes for nil.
    static func read(_ url: URL?) async throws -> [UInt8] {
        guard let url else { return [] }
        return try await run { Array(try Data(contentsOf: url)) }
    }
}
