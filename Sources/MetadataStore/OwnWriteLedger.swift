import FileProviderKit
import Synchronization

/// The remote identifiers that the mount's own writes changed, each stamped with a clock.
///
/// A change round lists the remote, then applies what it found; an upload that ends in between
/// leaves the store newer than the listing. Applied, the listing's older state would come back as
/// "a change from the remote": a file just written shows its previous size (0 for a new file), a
/// file just deleted reappears, and reads of it fail (git clone into the mount; DECISIONS 270). The
/// round takes a mark before it asks the remote, and leaves alone every item written since.
///
/// Only the change rounds take marks, one round at a time: a mark drops the stamps before it, which
/// no later round needs, and stamps are kept only from a round's first mark to its end, so that a
/// mount without rounds (`--poll-interval 0`) keeps none.
final class OwnWriteLedger: Sendable {
    private struct State {
        var clock: UInt64 = 0
        var stamps: [ItemIdentifier: UInt64] = [:]
        var roundUnderWay = false
    }
    private let state = Mutex(State())

    /// Records that the remote's `identifiers` now hold what this mount wrote.
    func note(_ identifiers: [ItemIdentifier]) {
        state.withLock { state in
            state.clock += 1
            guard state.roundUnderWay else { return }
            for identifier in identifiers { state.stamps[identifier] = state.clock }
        }
    }

    /// A mark for a round about to ask the remote (again).
    func mark() -> UInt64 {
        state.withLock { state in
            state.stamps.removeAll(keepingCapacity: true)
            state.roundUnderWay = true
            return state.clock
        }
    }

    /// The round ended: nothing needs the stamps until the next one's mark.
    func roundEnded() {
        state.withLock { state in
            state.stamps.removeAll()
            state.roundUnderWay = false
        }
    }

    /// Whether a write of this mount changed `identifier` after `mark`.
    func wrote(_ identifier: ItemIdentifier, since mark: UInt64) -> Bool {
        state.withLock { state in state.stamps[identifier].map { $0 > mark } ?? false }
    }
}
