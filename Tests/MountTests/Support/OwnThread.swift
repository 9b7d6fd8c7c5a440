import Foundation

/// Runs `work` on a thread of its own and returns what it returns. A test process has only two
/// cooperative threads; work that blocks for seconds there (writing the 1 GiB fixture, copying a
/// tree) stalls every other test of the run, long enough for their own deadlines to pass.
func onOwnThread<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
