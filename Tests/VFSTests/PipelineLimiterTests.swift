import Synchronization
import Testing

@testable import VFS

@Suite("PipelineLimiter")
struct PipelineLimiterTests {
    @Test("read-ahead never holds the last slot: a read of another file gets it at once")
    func readAheadLeavesOneSlotForReaders() async throws {
        let limiter = PipelineLimiter(depth: 3)
        #expect(limiter.tryAcquire(.readAhead)?.isReadAhead == true)
        #expect(limiter.tryAcquire(.readAhead)?.isReadAhead == true)
        #expect(limiter.tryAcquire(.readAhead) == nil)
        #expect(limiter.tryAcquire(.interactive) == .interactive)
        #expect(limiter.tryAcquire(.interactive) == nil)
    }

    @Test("once read-ahead's requests end quickly it may have the last slot, until they do not")
    func quickReadAheadTakesTheLastSlot() async throws {
        // No running request may count as slow here, however long a loaded machine sleeps.
        let limiter = PipelineLimiter(depth: 2, slowReadAhead: .seconds(3600))
        let first = try #require(limiter.tryAcquire(.readAhead))
        let queued = Task { try await limiter.acquire(limiter.makeTicket(), priority: .readAhead) }
        try await Task.sleep(for: .milliseconds(50))
        limiter.keepReserve(false)
        let second = try await queued.value
        #expect(limiter.tryAcquire(.interactive) == nil)

        limiter.keepReserve(true)
        limiter.release(second)
        #expect(limiter.tryAcquire(.readAhead) == nil, "the slot is the readers' again")
        #expect(limiter.tryAcquire(.interactive) == .interactive)
        limiter.release(first)
    }

    @Test("a read-ahead request running longer than the slow mark keeps the last slot for readers")
    func slowRunningReadAheadKeepsTheLastSlot() async throws {
        let limiter = PipelineLimiter(depth: 2, slowReadAhead: .milliseconds(100))
        limiter.keepReserve(false)
        let slow = try #require(limiter.tryAcquire(.readAhead))
        let quick = try #require(limiter.tryAcquire(.readAhead), "young requests leave the last slot to read-ahead")
        limiter.release(quick)
        try await Task.sleep(for: .milliseconds(150))
        #expect(limiter.tryAcquire(.readAhead) == nil, "the remote turned slow: the slot is the readers'")
        let read = try #require(limiter.tryAcquire(.interactive))
        limiter.release(read)
        limiter.release(slow)
        #expect(limiter.tryAcquire(.readAhead)?.isReadAhead == true)
        #expect(limiter.tryAcquire(.readAhead)?.isReadAhead == true, "the slow request ended")
    }

    @Test("a depth of one is all read-ahead's while no reader waits")
    func depthOneServesReadAhead() {
        let limiter = PipelineLimiter(depth: 1)
        #expect(limiter.tryAcquire(.readAhead)?.isReadAhead == true)
        #expect(limiter.tryAcquire(.interactive) == nil)
    }

    @Test("a freed slot goes to a waiting reader first, and a read-ahead slot back to read-ahead")
    func freedSlotsGoByPriority() async throws {
        let limiter = PipelineLimiter(depth: 2)
        let ahead = try #require(limiter.tryAcquire(.readAhead))
        let read = try #require(limiter.tryAcquire(.interactive))
        let queuedAhead = Task { try await limiter.acquire(limiter.makeTicket(), priority: .readAhead) }
        let queuedRead = Task { try await limiter.acquire(limiter.makeTicket(), priority: .interactive) }
        try await Task.sleep(for: .milliseconds(50))
        limiter.release(read)
        #expect(try await queuedRead.value == .interactive)
        limiter.release(ahead)
        #expect(try await queuedAhead.value.isReadAhead)
    }

    @Test("a queued read-ahead that a reader joins takes the slot read-ahead may not")
    func promotedReadAheadTakesTheReservedSlot() async throws {
        let limiter = PipelineLimiter(depth: 2)
        let held = try #require(limiter.tryAcquire(.readAhead))
        let ticket = limiter.makeTicket()
        let queued = Task { try await limiter.acquire(ticket, priority: .readAhead) }
        // Promoting is a no-op until the task has queued; the release after ends the wait
        // either way, so a failure cannot hang the test.
        for _ in 0..<20 {
            try await Task.sleep(for: .milliseconds(10))
            limiter.promote(ticket)
        }
        limiter.release(held)
        #expect(try await queued.value == .interactive)
    }

    @Test("a freed read-ahead slot goes to the file holding the fewest, not to the oldest waiter")
    func readAheadSlotsAreSharedBetweenFiles() async throws {
        let limiter = PipelineLimiter(depth: 2, slowReadAhead: .seconds(3600))
        limiter.keepReserve(false)
        let first = try #require(limiter.tryAcquire(.readAhead, owner: 1))
        let second = try #require(limiter.tryAcquire(.readAhead, owner: 1))
        // File 1 queues two more before file 2 queues one; the slots are logged as granted.
        let granted = GrantLog()
        for owner: Int64 in [1, 1, 2] {
            Task {
                let slot = try await limiter.acquire(limiter.makeTicket(owner: owner), priority: .readAhead)
                granted.entries.withLock { $0.append((owner, slot)) }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        func owners(once count: Int) async throws -> [Int64] {
            for _ in 0..<200 where granted.entries.withLock({ $0.count }) < count {
                try await Task.sleep(for: .milliseconds(10))
            }
            return granted.entries.withLock { $0.map(\.owner) }
        }

        limiter.release(first)
        #expect(try await owners(once: 1) == [2], "file 2 holds none, file 1 two")
        limiter.release(second)
        #expect(try await owners(once: 2) == [2, 1])
        for (_, slot) in granted.entries.withLock({ $0 }) { limiter.release(slot) }
        #expect(try await owners(once: 3) == [2, 1, 1])
    }
}

/// The slots granted to queued fetches, in order, with the file each was for.
private final class GrantLog: Sendable {
    let entries = Mutex<[(owner: Int64, slot: PipelineLimiter.Slot)]>([])
}
