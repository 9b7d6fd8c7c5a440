import Synchronization

/// Watches every provider call that runs under the remote bound (`Deadline`) from one task, and
/// fails a call once its progress mark has stood still for its limit.
///
/// Each call had a watchdog task of its own, which the pool started with the call and woke again
/// to cancel it: two hops through the cooperative threads per fetch, on a machine where a thread
/// woken on an idle core costs a VM exit. The one watcher sleeps until the earliest moment a call
/// could expire and looks again then; it ends when nothing is left to watch at that moment.
final class RemoteWatch: Sendable {
    /// The process's watcher: calls of every mount (and every test's file system) share it.
    static let shared = RemoteWatch()

    private struct Watched {
        let progress: ProgressMark
        let limit: Duration
        let expire: @Sendable () -> Void
        var deadline: ContinuousClock.Instant { progress.lastProgress + limit }
    }

    /// Guards the calls watched, whether the watcher runs, and when it looks next.
    private struct State {
        var watched: [UInt64: Watched] = [:]
        var nextID: UInt64 = 0
        var isWatching = false
        var nextLook: ContinuousClock.Instant?
    }
    private let state = Mutex(State())
    private let wake = WakeSignal()

    /// Watches a call: `expire` runs once, on the watcher, if `progress` does not move for
    /// `limit`. Returns what `stopWatching` takes.
    func watch(_ progress: ProgressMark, limit: Duration, expire: @escaping @Sendable () -> Void) -> UInt64 {
        let deadline = progress.lastProgress + limit
        let (id, start, nudge) = state.withLock { state -> (UInt64, Bool, Bool) in
            state.nextID += 1
            state.watched[state.nextID] = Watched(progress: progress, limit: limit, expire: expire)
            let start = !state.isWatching
            state.isWatching = true
            let nudge = !start && (state.nextLook.map { deadline < $0 } ?? true)
            return (state.nextID, start, nudge)
        }
        if start {
            Task { await self.run() }
        } else if nudge {
            wake.signal()
        }
        return id
    }

    /// Stops watching a call (it ended, or gave up).
    func stopWatching(_ id: UInt64) {
        _ = state.withLock { $0.watched.removeValue(forKey: id) }
    }

    /// Expires the calls whose time is up, then sleeps until the next could be (or a call with an
    /// earlier deadline comes); ends when none is watched.
    private func run() async {
        while true {
            let now = ContinuousClock.now
            let (expired, nextLook) = state.withLock { state -> ([Watched], ContinuousClock.Instant?) in
                let expired = state.watched.filter { $0.value.deadline <= now }
                for id in expired.keys { state.watched[id] = nil }
                let nextLook = state.watched.values.map(\.deadline).min()
                state.nextLook = nextLook
                if nextLook == nil { state.isWatching = false }
                return (Array(expired.values), nextLook)
            }
            for call in expired { call.expire() }
            guard let nextLook else { return }
            await wake.wait(timeout: nextLook - now)
        }
    }
}
