import CFuse
import Glibc
import Synchronization

/// Wakes the session loop when the session is to end: on `unmount()`, and on SIGINT, SIGTERM or
/// SIGHUP, the signals libfuse's handlers end a session on.
///
/// libfuse's handlers only set the session's exit flag, and a signal taken by another thread does
/// not interrupt the session thread's `poll`, so the loop had to wake every 100 ms to look at the
/// flag, on an idle mount too. This eventfd sits in the loop's `poll` beside /dev/fuse: the loop
/// sleeps until a request or an end comes. Signal handlers are process-wide, so one session per
/// process catches them (as with libfuse's own).
final class SessionWake: Sendable {
    let descriptor: Int32

    init?() {
        let descriptor = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Wakes the loop; async-signal-safe (one `write`).
    func wake() { Self.wake(descriptor) }

    private static func wake(_ descriptor: Int32) {
        var one: UInt64 = 1
        _ = write(descriptor, &one, MemoryLayout<UInt64>.size)
    }

    /// SIGINT, SIGTERM and SIGHUP, those of them still at their default action: the ones libfuse's
    /// `fuse_set_signal_handlers` takes (it leaves a signal the program handles alone).
    static func defaultExitSignals() -> [Int32] {
        [SIGINT, SIGTERM, SIGHUP].filter { signal in
            var current = sigaction()
            return sigaction(signal, nil, &current) == 0 && current.__sigaction_handler.sa_handler == nil
        }
    }

    /// Makes `signals` wake the loop, in place of libfuse's handlers for them.
    func catchExitSignals(_ signals: [Int32]) {
        signalledDescriptor.store(descriptor, ordering: .sequentiallyConsistent)
        for signal in signals { Glibc.signal(signal, wakeOnSignal) }
    }

    /// Gives `signals` back to their default action (libfuse resets only its own handlers).
    func releaseExitSignals(_ signals: [Int32]) {
        for signal in signals { Glibc.signal(signal, nil) }
        signalledDescriptor.store(-1, ordering: .sequentiallyConsistent)
    }

    fileprivate static func wakeFromSignal() {
        let descriptor = signalledDescriptor.load(ordering: .sequentiallyConsistent)
        if descriptor >= 0 { wake(descriptor) }
    }
}

/// The descriptor the exit signals write to, set before the handlers are installed (so the
/// handler never runs the global's first initialization itself).
private let signalledDescriptor = Atomic<Int32>(-1)

private func wakeOnSignal(_: Int32) { SessionWake.wakeFromSignal() }
