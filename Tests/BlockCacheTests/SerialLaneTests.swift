import Dispatch
import Glibc
import Synchronization
import Testing

@testable import BlockCache

@Suite("SerialLane")
struct SerialLaneTests {
    /// What the jobs saw: the order they ran in, and whether one ran while another did.
    final class Record: Sendable {
        struct State {
            var order: [Int] = []
            var running = 0
            var overlapped = false
        }
        let state = Mutex(State())

        func run(_ job: Int, sleeping microseconds: UInt32 = 0) {
            state.withLock { state in
                state.overlapped = state.overlapped || state.running > 0
                state.running += 1
            }
            usleep(microseconds)
            state.withLock { state in
                state.running -= 1
                state.order.append(job)
            }
        }
    }

    @Test("jobs from several submitters run one at a time, each submitter's in its order")
    func jobsRunOneAtATimeInOrder() async {
        let lane = SerialLane()
        let record = Record()
        let submitters = 4
        let jobsEach = 50
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let left = Mutex(submitters * jobsEach)
            DispatchQueue.concurrentPerform(iterations: submitters) { submitter in
                for index in 0..<jobsEach {
                    lane.submit {
                        record.run(submitter * jobsEach + index, sleeping: 50)
                        if left.withLock({ left in
                            left -= 1
                            return left == 0
                        }) {
                            done.resume()
                        }
                    }
                }
            }
        }
        let state = record.state.withLock { $0 }
        #expect(!state.overlapped)
        #expect(state.order.count == submitters * jobsEach)
        for submitter in 0..<submitters {
            let own = state.order.filter { $0 / jobsEach == submitter }
            #expect(own == own.sorted())
        }
    }

    @Test("a job's next turn, submitted while it runs, waits behind the jobs already queued")
    func nextTurnGoesToTheBack() async {
        let lane = SerialLane()
        let record = Record()
        let secondQueued = DispatchSemaphore(value: 0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            lane.submit {
                secondQueued.wait()
                record.run(1)
                lane.submit {
                    record.run(3)
                    done.resume()
                }
            }
            lane.submit { record.run(2) }
            secondQueued.signal()
        }
        #expect(record.state.withLock { $0.order } == [1, 2, 3])
    }
}
