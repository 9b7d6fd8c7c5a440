import Testing

@testable import BlockCache

@Suite("CommitWindow", .timeLimit(.minutes(1)))
struct CommitWindowTests {
    /// Starts `count` waits in `window`, runs `end` once they have all begun, and returns once
    /// they have all ended.
    private func waits(_ count: Int, in window: CommitWindow, endedBy end: @Sendable () -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<count { group.addTask { await window.wait() } }
            while window.waitCount < count { try? await Task.sleep(for: .milliseconds(5)) }
            end()
        }
    }

    @Test("closing the window ends the waits in it, and later waits do not start")
    func closingEndsEveryWait() async {
        let window = CommitWindow(length: .seconds(3600), byteLimit: 1 << 20)
        await waits(3, in: window) { window.close() }
        await window.wait()
    }

    @Test("hurrying ends the waits under way, and the fetched bytes reaching the limit do too")
    func hurryingAndFetchedBytesEndTheWaits() async {
        let window = CommitWindow(length: .seconds(3600), byteLimit: 1 << 20)
        await waits(2, in: window) { window.hurry() }
        await waits(2, in: window) {
            window.noteFetched(1 << 19)
            #expect(window.waitCount == 2, "half the limit ended the waits")
            window.noteFetched(1 << 19)
        }
    }

    @Test("an open window's wait ends after its length")
    func anOpenWindowEndsByItself() async {
        let window = CommitWindow(length: .milliseconds(10), byteLimit: 1 << 20)
        let waited = await ContinuousClock().measure { await window.wait() }
        #expect(waited >= .milliseconds(10))
    }
}
