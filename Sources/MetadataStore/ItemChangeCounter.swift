import GRDB
import Synchronization

/// Counts the committed transactions that added, changed or removed items. Two equal readings
/// mean no item changed in between, so a reader can reuse what it derived from the items then
/// (the kernel's cached directory listings) without reading them again.
///
/// The count moves just after the commit: a reader that takes the count before it reads the
/// items sees at least the items of that count.
///
/// It also remembers, for at least the last `rememberedCommits` counts, which folder's children each one
/// changed when that was one folder's only: storing a listing adds or removes children of the
/// listed folder and nothing else. A folder's listing read before a run of such commits, all for
/// other folders, is still its listing after them (`unchangedChildren`): a cold walk stores a
/// thousand listings, and the warm walk after it need not read each folder again to know that.
final class ItemChangeCounter: TransactionObserver, Sendable {
    private struct State {
        var count: UInt64 = 0
        /// Whether the transaction under way changed an item.
        var changedItems = false
        /// The folder (inode) whose children the transaction under way declared it changes alone,
        /// while every item change seen so far bears that out.
        var confinedTo: UInt64?
        /// For the counts from `firstRemembered` on, in order: the folder each one's changes were
        /// confined to, or nil for any change.
        var confinement: [UInt64?] = []
        var firstRemembered: UInt64 = 1
    }
    /// Guards the count and the rest (GRDB calls in from its writer queue, readers from anywhere).
    private let state = Mutex(State())

    /// How many commits' confinements are kept at least: a cold walk of a thousand folders makes
    /// about a thousand.
    private let rememberedCommits: Int

    init(rememberedCommits: Int = 8192) {
        self.rememberedCommits = max(rememberedCommits, 1)
    }

    var count: UInt64 { state.withLock { $0.count } }

    /// Declares that the transaction under way changes only children of `folder` (an inode),
    /// adding or removing them: no item moves in or out of another folder, none changes in place.
    /// Called inside the transaction, before its changes. An item updated in place (which might
    /// be a move from another folder) makes the transaction count as changing anything.
    func confineTransaction(toChildrenOf folder: UInt64) {
        state.withLock { $0.confinedTo = folder }
    }

    /// The count now, if no commit after `generation` changed children of `folder` (each one was
    /// confined to another folder's children); nil if one may have, or if those commits are no
    /// longer remembered.
    func unchangedChildren(of folder: UInt64, since generation: UInt64) -> UInt64? {
        state.withLock { state in
            guard generation < state.count else { return generation == state.count ? generation : nil }
            guard generation + 1 >= state.firstRemembered else { return nil }
            let start = Int(generation + 1 - state.firstRemembered)
            for confined in state.confinement[start...] where confined == nil || confined == folder {
                return nil
            }
            return state.count
        }
    }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { eventKind.tableName == "item" }

    func databaseDidChange(with event: DatabaseEvent) {
        let confined = state.withLock { state in
            state.changedItems = true
            if event.kind == .update { state.confinedTo = nil }
            return state.confinedTo != nil
        }
        // Nothing more to learn from this transaction's changes: the per-row calls end here.
        if !confined { stopObservingDatabaseChangesUntilNextTransaction() }
    }

    func databaseDidCommit(_ db: Database) {
        state.withLock { state in
            if state.changedItems {
                state.count += 1
                state.confinement.append(state.confinedTo)
                // Dropped half at a time, so that each commit costs little on average.
                if state.confinement.count > 2 * rememberedCommits {
                    let dropped = state.confinement.count - rememberedCommits
                    state.confinement.removeFirst(dropped)
                    state.firstRemembered += UInt64(dropped)
                }
            }
            state.changedItems = false
            state.confinedTo = nil
        }
    }

    func databaseDidRollback(_ db: Database) {
        state.withLock { state in
            state.changedItems = false
            state.confinedTo = nil
        }
    }
}
