import Foundation

/// Runs `work` on a thread of its own and returns what it returns. A test process has only two
/// cooperative threads; work that blocks there (a tool run to its end, writing the 1 GiB fixture,
/// copying a tree) stalls every other test of the run, for long enough that their own deadlines
/// pass.
public func onOwnThread<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
