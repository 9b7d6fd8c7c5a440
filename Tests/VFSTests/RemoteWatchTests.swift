import Synchronization
import Testing

@testable import VFS

/// Timing here is judged from inside the expiry (how long the call had stood still then), so a
/// test process whose threads are held up for a while does not fail them.
@Suite("The remote bound's one watcher")
struct RemoteWatchTests {
    /// One watched call: its progress, and how long it had stood still at each expiry.
    private final class Call: Sendable {
        let progress = ProgressMark()
        let stillAtExpiries = Mutex<[Duration]>([])
        func expire() {
            let still = ContinuousClock.now - progress.lastProgress
            stillAtExpiries.withLock { $0.append(still) }
        }
        var expiries: [Duration] { stillAtExpiries.withLock { $0 } }
    }

    @Test("a call whose progress stands still expires once, after its limit")
    func stillCallExpiresOnce() async throws {
        let watch = RemoteWatch()
        let call = Call()
        _ = watch.watch(call.progress, limit: .milliseconds(300), expire: call.expire)
        try await eventually { !call.expiries.isEmpty }
        try await Task.sleep(for: .milliseconds(400))
        #expect(call.expiries.count == 1)
        #expect(call.expiries.allSatisfy { $0 >= .milliseconds(300) }, "expired after \(call.expiries)")
    }

    @Test("progress keeps a call alive; it expires once the progress stops")
    func progressKeepsACallAlive() async throws {
        let watch = RemoteWatch()
        let call = Call()
        _ = watch.watch(call.progress, limit: .milliseconds(300), expire: call.expire)
        for _ in 0..<12 where call.expiries.isEmpty {
            try await Task.sleep(for: .milliseconds(50))
            call.progress.touch(bytes: 64 << 10)
        }
        try await eventually { !call.expiries.isEmpty }
        #expect(call.expiries.allSatisfy { $0 >= .milliseconds(300) }, "expired after \(call.expiries)")
    }

    @Test("a trickle slower than the rate floor does not keep a call alive")
    func trickleDoesNotKeepACallAlive() async throws {
        let watch = RemoteWatch()
        let call = Call()
        _ = watch.watch(call.progress, limit: .milliseconds(300), expire: call.expire)
        // One byte every 50 ms: 20 B/s, far below 1 KiB/s.
        for _ in 0..<40 where call.expiries.isEmpty {
            try await Task.sleep(for: .milliseconds(50))
            call.progress.touch(bytes: 1)
        }
        #expect(call.expiries.count == 1, "a trickle of 20 B/s kept the call alive for 2 s")
    }

    @Test("a call with a short limit is not held up by one watched before it with a long limit")
    func aShortLimitIsNotHeldUpByALongOne() async throws {
        let watch = RemoteWatch()
        let long = Call()
        let short = Call()
        let longID = watch.watch(long.progress, limit: .seconds(60), expire: long.expire)
        defer { watch.stopWatching(longID) }
        try await Task.sleep(for: .milliseconds(50))
        _ = watch.watch(short.progress, limit: .milliseconds(200), expire: short.expire)
        try await eventually { !short.expiries.isEmpty }
        #expect(long.expiries.isEmpty)
    }

    @Test("a call no longer watched does not expire")
    func stoppedCallDoesNotExpire() async throws {
        let watch = RemoteWatch()
        let call = Call()
        let id = watch.watch(call.progress, limit: .milliseconds(200), expire: call.expire)
        watch.stopWatching(id)
        try await Task.sleep(for: .milliseconds(600))
        #expect(call.expiries.isEmpty)
    }

    /// Waits until `condition` holds, failing after 10 s.
    private func eventually(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            try #require(ContinuousClock.now < deadline, "the expected expiry did not come within 10 s")
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
