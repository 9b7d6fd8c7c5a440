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
/// no later round needs.
final class OwnWriteLedger: Sendable {
    private struct State {
        var clock: UInt64 = 0
        var stamps: [ItemIdentifier: UInt64] = [:]
    }
    private let state = Mutex(State())

    /// Records that the remote's `identifiers` now hold what this mount wrote.
    func note(_ identifiers: [ItemIdentifier]) {
        state.withLock { state in
            state.clock += 1
            for identifier in identifiers { state.stamps[identifier] = state.clock }
        }
    }

    /// A mark for a round about to ask the remote.
    func mark() -> UInt64 {
        state.withLock { state in
            state.stamps.removeAll(keepingCapacity: true)
            return state.clock
        }
    }

    /// Whether a write of this mount changed `identifier` after `mark`.
    func wrote(_ identifier: ItemIdentifier, since mark: UInt64) -> Bool {
        state.withLock { state in state.stamps[identifier].map { $0 > mark } ?? false }
    }
}
