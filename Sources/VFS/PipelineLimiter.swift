import Synchronization

/// Who is waiting for a fetch: a process blocked in read(2), or read-ahead that no one waits on yet.
enum FetchPriority: Sendable {
    case interactive
    case readAhead
}

/// Bounds the content fetches in flight per mount (the pipeline depth, ARCHITECTURE §3).
///
/// A fetch takes a slot before it calls the provider and gives it back when the call ends. When
/// all slots are taken, waiters queue by priority: interactive reads go ahead of read-ahead, and a
/// queued read-ahead is promoted once a reader starts waiting on it. A free slot goes to the
/// queued read-ahead of the file that holds the fewest read-ahead slots, the oldest first among
/// equals, so that parallel readers share the pipeline rather than the first one's window taking
/// it (DECISIONS 141). Cancelling a waiting task takes it out of the queue.
///
/// Read-ahead does not hold the last slot (at depths above one) unless `keepReserve(false)` said
/// its requests end quickly and none running has taken longer than `slowReadAhead`: a streaming
/// reader's window can fill every other slot with large requests, which on a slow link take many
/// seconds each, and a read of another file must not wait for one of them to end (DECISIONS 101);
/// on a fast link that slot is a stream's speed, and a reader waits at most for the quickest of
/// the requests in flight (DECISIONS 103, 106).
final class PipelineLimiter: Sendable {
    /// Identifies one queued or running fetch, for promotion and cancellation, and the file it
    /// fetches for (`owner`), whose read-ahead shares the slots with other files'.
    struct Ticket: Hashable, Sendable {
        fileprivate let id: UInt64
        fileprivate let owner: Int64
    }

    /// A slot held, by the kind of fetch it was given to; give it back with `release`.
    enum Slot: Sendable, Hashable {
        case interactive
        /// Given to read-ahead for the file `owner` at `since`.
        case readAhead(since: ContinuousClock.Instant, owner: Int64)

        var isReadAhead: Bool { if case .readAhead = self { true } else { false } }
    }

    let depth: Int

    private struct Waiter {
        let ticket: Ticket
        let continuation: CheckedContinuation<Slot, any Error>
    }

    /// Guards the slots in use, both queues and ticket numbering.
    private struct State {
        let depth: Int
        /// The most slots read-ahead may hold at once while the reserve is kept: all but one, at
        /// depths above one.
        let readAheadDepth: Int
        /// Whether read-ahead is kept from the last slot (until its requests are known to end
        /// quickly).
        var keepsReserve = true
        /// A read-ahead request running longer than this keeps the last slot from read-ahead: the
        /// remote turned slow since the last one ended.
        let slowReadAhead: Duration
        var inUse = 0
        /// When each read-ahead slot in use was given.
        var readAheadSince: [ContinuousClock.Instant] = []
        /// The read-ahead slots in use per file.
        var readAheadHeld: [Int64: Int] = [:]
        var interactive: [Waiter] = []
        var readAhead: [Waiter] = []
        var nextTicket: UInt64 = 0

        /// Takes the first waiter that a free slot may go to (interactive first) off its queue,
        /// with that slot.
        mutating func nextWaiter() -> (Waiter, Slot)? {
            if !interactive.isEmpty, let granted = take(.interactive, owner: interactive[0].ticket.owner) {
                return (interactive.removeFirst(), granted)
            }
            guard let fairest = fairestReadAhead(),
                let granted = take(.readAhead, owner: readAhead[fairest].ticket.owner)
            else { return nil }
            return (readAhead.remove(at: fairest), granted)
        }

        /// The queued read-ahead whose file holds the fewest read-ahead slots, the oldest among
        /// equals.
        private func fairestReadAhead() -> Int? {
            readAhead.indices.min {
                readAheadHeld[readAhead[$0].ticket.owner, default: 0]
                    < readAheadHeld[readAhead[$1].ticket.owner, default: 0]
            }
        }

        /// Counts a slot as taken for `priority` and the file `owner` if one is free for it.
        mutating func take(_ priority: FetchPriority, owner: Int64) -> Slot? {
            guard inUse < depth else { return nil }
            switch priority {
            case .interactive:
                inUse += 1
                return .interactive
            case .readAhead:
                let now = ContinuousClock.now
                if readAheadSince.count >= readAheadDepth {
                    guard !keepsReserve, readAheadSince.allSatisfy({ now - $0 < slowReadAhead }) else { return nil }
                }
                inUse += 1
                readAheadSince.append(now)
                readAheadHeld[owner, default: 0] += 1
                return .readAhead(since: now, owner: owner)
            }
        }
    }

    private let state: Mutex<State>

    init(depth: Int, slowReadAhead: Duration = .seconds(1)) {
        precondition(depth >= 1, "pipeline depth must be at least 1")
        self.depth = depth
        self.state = Mutex(State(depth: depth, readAheadDepth: max(depth - 1, 1), slowReadAhead: slowReadAhead))
    }

    /// A new ticket for a fetch for the file `owner`; pass it to `acquire` and, to promote, to
    /// `promote`.
    func makeTicket(owner: Int64 = 0) -> Ticket {
        state.withLock { state in
            state.nextTicket += 1
            return Ticket(id: state.nextTicket, owner: owner)
        }
    }

    /// Waits for a free slot. Throws CancellationError if the task is cancelled while queued.
    func acquire(_ ticket: Ticket, priority: FetchPriority) async throws -> Slot {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Slot, any Error>) in
                let granted = state.withLock { state -> Slot? in
                    if let slot = state.take(priority, owner: ticket.owner) {
                        return slot
                    }
                    let waiter = Waiter(ticket: ticket, continuation: continuation)
                    switch priority {
                    case .interactive: state.interactive.append(waiter)
                    case .readAhead: state.readAhead.append(waiter)
                    }
                    return nil
                }
                if let granted { continuation.resume(returning: granted) }
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

    /// Takes a free slot for `priority` and the file `owner` without waiting; nil when none is
    /// free for it.
    func tryAcquire(_ priority: FetchPriority, owner: Int64 = 0) -> Slot? {
        state.withLock { $0.take(priority, owner: owner) }
    }

    /// Gives `slot` back, handing it straight to the first waiter that may have it (interactive
    /// first).
    func release(_ slot: Slot) {
        let next = state.withLock { state -> (Waiter, Slot)? in
            state.inUse -= 1
            if case .readAhead(let since, let owner) = slot {
                if let index = state.readAheadSince.firstIndex(of: since) { state.readAheadSince.remove(at: index) }
                state.readAheadHeld[owner, default: 1] -= 1
                if state.readAheadHeld[owner] == 0 { state.readAheadHeld[owner] = nil }
            }
            return state.nextWaiter()
        }
        if let (waiter, granted) = next { waiter.continuation.resume(returning: granted) }
    }

    /// Keeps the last slot from read-ahead or gives it back to it; a queued read-ahead may take a
    /// slot that is free now.
    func keepReserve(_ keep: Bool) {
        let next = state.withLock { state -> (Waiter, Slot)? in
            guard state.keepsReserve != keep else { return nil }
            state.keepsReserve = keep
            return keep ? nil : state.nextWaiter()
        }
        if let (waiter, granted) = next { waiter.continuation.resume(returning: granted) }
    }

    /// Moves a queued read-ahead to the interactive queue: a reader now waits for it, and it may
    /// have the slot read-ahead may not.
    func promote(_ ticket: Ticket) {
        let next = state.withLock { state -> (Waiter, Slot)? in
            guard let index = state.readAhead.firstIndex(where: { $0.ticket == ticket }) else { return nil }
            state.interactive.append(state.readAhead.remove(at: index))
            return state.nextWaiter()
        }
        if let (waiter, granted) = next { waiter.continuation.resume(returning: granted) }
    }
}
