import GRDB
import Synchronization

/// Counts the committed transactions that added, changed or removed items. Two equal readings
/// mean no item changed in between, so a reader can reuse what it derived from the items then
/// (the kernel's cached directory listings) without reading them again.
///
/// The count moves just after the commit: a reader that takes the count before it reads the
/// items sees at least the items of that count.
final class ItemChangeCounter: TransactionObserver, Sendable {
    private struct State {
        var count: UInt64 = 0
        /// Whether the transaction under way changed an item.
        var changedItems = false
    }
    /// Guards the count and the flag (GRDB calls in from its writer queue, readers from anywhere).
    private let state = Mutex(State())

    var count: UInt64 { state.withLock { $0.count } }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { eventKind.tableName == "item" }

    func databaseDidChange(with event: DatabaseEvent) { state.withLock { $0.changedItems = true } }

    func databaseDidCommit(_ db: Database) {
        state.withLock { state in
            if state.changedItems { state.count += 1 }
            state.changedItems = false
        }
    }

    func databaseDidRollback(_ db: Database) { state.withLock { $0.changedItems = false } }
}
