import Collections
import FileProviderKit
import Synchronization

/// Runs jobs one at a time, in the order they were submitted, on the blocking-I/O queue, holding
/// a thread only while jobs wait.
///
/// For the writes into one cache file: ext4 takes the file's inode lock for every buffered write,
/// and fetches writing the same file from both cores spin on it (DECISIONS 158). A job that has
/// more to do submits its next turn rather than looping, so that jobs of several writers take turns.
public final class SerialLane: Sendable {
    public typealias Job = @Sendable () -> Void

    private struct State {
        var jobs = Deque<Job>()
        var isRunning = false
    }
    private let state = Mutex(State())

    public init() {}

    /// Queues `job`, starting the lane's thread when it is idle.
    public func submit(_ job: @escaping Job) {
        let start = state.withLock { state -> Bool in
            state.jobs.append(job)
            guard !state.isRunning else { return false }
            state.isRunning = true
            return true
        }
        if start { BlockingIO.start { self.run() } }
    }

    private func run() {
        while let job = nextJob() { job() }
    }

    /// The oldest waiting job; or nil, marking the lane idle in the same step, so that a job
    /// submitted right after is started by its submitter.
    private func nextJob() -> Job? {
        state.withLock { state in
            guard let job = state.jobs.popFirst() else {
                state.isRunning = false
                return nil
            }
            return job
        }
    }
}
