import Synchronization

/// Who is waiting for a fetch: a process blocked in read(2), or read-ahead that no one waits on yet.
enum FetchPriority: Sendable {
    case interactive
    case readAhead
}

/// Bounds the content fetches in flight per mount (the pipeline depth, DESIGN §3).
///
/// A fetch takes a slot before it calls the provider and gives it back when the call ends. When
/// all slots are taken, waiters queue by priority: interactive reads go ahead of read-ahead, and a
/// queued read-ahead is promoted once a reader starts waiting on it. Cancelling a waiting task
/// takes it out of the queue.
final class PipelineLimiter: Sendable {
    /// Identifies one queued or running fetch, for promotion and cancellation.
    struct Ticket: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    let depth: Int

    private struct Waiter {
        let ticket: Ticket
        let continuation: CheckedContinuation<Void, any Error>
    }

    /// Guards the slots in use, both queues and ticket numbering.
    private struct State {
        var inUse = 0
        var interactive: [Waiter] = []
        var readAhead: [Waiter] = []
        var nextTicket: UInt64 = 0
    }
    private let state = Mutex(State())

    init(depth: Int) {
        precondition(depth >= 1, "pipeline depth must be at least 1")
        self.depth = depth
    }

    /// A new ticket; pass it to `acquire` and, to promote, to `promote`.
    func makeTicket() -> Ticket {
        state.withLock { state in
            state.nextTicket += 1
            return Ticket(id: state.nextTicket)
        }
    }

    /// Waits for a free slot. Throws CancellationError if the task is cancelled while queued.
    func acquire(_ ticket: Ticket, priority: FetchPriority) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let granted = state.withLock { state -> Bool in
                    if state.inUse < depth {
                        state.inUse += 1
                        return true
                    }
                    let waiter = Waiter(ticket: ticket, continuation: continuation)
                    switch priority {
                    case .interactive: state.interactive.append(waiter)
                    case .readAhead: state.readAhead.append(waiter)
                    }
                    return false
                }
                if granted { continuation.resume() }
            }
        } onCancel: {
            let removed = state.withLock { state -> Waiter? in
                if let index = state.interactive.firstIndex(where: { $0.ticket == ticket }) {
                    return state.interactive.remove(at: index)
                }
                if let index = state.readAhead.firstIndex(where: { $0.ticket == ticket }) {
                    return state.readAhead.remove(at: index)
                }
                return nil
            }
            removed?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Takes a free slot without waiting; false when all are taken (or promised to waiters).
    func tryAcquire() -> Bool {
        state.withLock { state in
            guard state.inUse < depth else { return false }
            state.inUse += 1
            return true
        }
    }

    /// Gives a slot back, handing it straight to the first waiter (interactive first).
    func release() {
        let next = state.withLock { state -> Waiter? in
            if !state.interactive.isEmpty { return state.interactive.removeFirst() }
            if !state.readAhead.isEmpty { return state.readAhead.removeFirst() }
            state.inUse -= 1
            return nil
        }
        next?.continuation.resume()
    }

    /// Moves a queued read-ahead to the interactive queue: a reader now waits for it.
    func promote(_ ticket: Ticket) {
        state.withLock { state in
            guard let index = state.readAhead.firstIndex(where: { $0.ticket == ticket }) else { return }
            state.interactive.append(state.readAhead.remove(at: index))
        }
    }
}
