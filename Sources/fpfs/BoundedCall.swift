import Dispatch
import Foundation
import Synchronization

/// A blocking call that may never return (a system call on a mount whose daemon hangs, stopped or
/// stuck), run on a thread of its own and waited for at most a deadline. A thread left waiting in
/// the kernel ends with the command's process.
enum BoundedCall {
    /// How long the commands wait for a mount's daemon to answer one request.
    static let daemonSeconds = 10

    /// The call's result, or nil when it did not return within `seconds`.
    static func run<Value: Sendable>(seconds: Int, _ call: @escaping @Sendable () -> Value) -> Value? {
        let handoff = Handoff<Value>()
        Thread { handoff.finish(call()) }.start()
        return handoff.wait(seconds: seconds)
    }

    /// The result, passed from the calling thread to the waiting one.
    private final class Handoff<Value: Sendable>: Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let value = Mutex<Value?>(nil)

        func finish(_ result: Value) {
            value.withLock { $0 = result }
            done.signal()
        }

        func wait(seconds: Int) -> Value? {
            guard done.wait(timeout: .now() + .seconds(seconds)) == .success else { return nil }
            return value.withLock { $0 }
        }
    }
}
