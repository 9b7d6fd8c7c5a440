import FileProviderKit
import FuseKit
import MetadataStore
import Synchronization

/// The inodes the kernel currently holds: each one's count of kernel references, from the first
/// lookup to the forget that brings it to zero (the root lives for the whole mount).
///
/// A held inode keeps its whole record here only where memory must answer for it:
/// - directories, which every lookup, listing and create below them starts from (and are few);
/// - files opened (or created open) since their lookup, whose next opens need no store read and
///   whose writes go on after an unlink;
/// - items whose record memory changed ahead of the store (a write's new size, saved at flush);
/// - items whose record changed after the kernel looked them up (a remote change, an upload's
///   outcome), so that release can tell a handle of an older version.
/// Every other held item is only counted, and getattr reads its record from the store: a whole
/// record per held inode cost about a kilobyte each, and `find` or `ls -lR` of a big tree makes the
/// kernel hold every item of it (DECISIONS 80). Where a record is kept it is the truth for that
/// inode, so every change to the store's record of a held inode comes here too.
///
/// The records of the last few files looked up are remembered as well, so that the open that
/// usually follows a lookup keeps one without reading the store (DECISIONS 89).
final class NodeTable: Sendable {
    /// How many recent lookups are remembered: a program opens what it just looked up, and a
    /// listing's readdirplus lookups are not remembered.
    static let recentLookupLimit = 16

    private struct State {
        var lookups: [InodeNumber: LookupCount] = [:]
        var records: [InodeNumber: ItemRecord] = [:]
        /// Files' records as a lookup read them from the store, with the epoch read before that
        /// read; good only while the epoch has not moved since.
        var recentLookups: [(record: ItemRecord, epoch: UInt64)] = []
        /// Counts the store changes reported here (`replace`, `refresh`, `replaceIdentifier`), so
        /// that a record read from the store before one of them is not kept (`keep`).
        var epoch: UInt64 = 0

        func holds(_ inode: InodeNumber) -> Bool { inode == .root || lookups[inode] != nil }
    }

    /// Guards the counts and the records kept.
    private let state = Mutex(State())

    init(root: ItemRecord) {
        state.withLock { $0.records[.root] = root }
    }

    /// The record memory keeps for `inode`, if it keeps one (see the type's comment).
    func record(_ inode: InodeNumber) -> ItemRecord? {
        state.withLock { $0.records[inode] }
    }

    func holds(_ inode: InodeNumber) -> Bool {
        state.withLock { $0.holds(inode) }
    }

    /// The kernel got a reference to `record`'s inode (lookup, readdirplus, create). Its record is
    /// kept if it is a directory's, and replaces the one kept already (newer data replaces older,
    /// except what memory holds ahead of the store).
    /// A file's record read from the store after `epoch` was read is remembered as a recent lookup.
    func addLookup(of record: ItemRecord, readAt epoch: UInt64? = nil) {
        let inode = InodeNumber(record.inode)
        state.withLock { state in
            state.lookups[inode, default: LookupCount()].increment()
            if record.item.kind == .directory || state.records[inode] != nil {
                state.records[inode] = Self.withUnsavedWrites(record, kept: state.records[inode])
            } else if let epoch, epoch == state.epoch {
                state.recentLookups.removeAll { $0.record.inode == record.inode }
                if state.recentLookups.count == Self.recentLookupLimit { state.recentLookups.removeFirst() }
                state.recentLookups.append((record, epoch))
            }
        }
    }

    /// `record` as the store has it, with what memory holds ahead of the store: the size and
    /// time of a file written since its handle last saved them (at flush), while the kept record
    /// has the same content. A lookup in between answered the store's older size, and the kernel
    /// showed it (a stat after `mkdir` of the file's name; the checker, seed 19019; DECISIONS 309).
    func withUnsavedWrites(_ record: ItemRecord) -> ItemRecord {
        state.withLock { Self.withUnsavedWrites(record, kept: $0.records[InodeNumber(record.inode)]) }
    }

    private static func withUnsavedWrites(_ record: ItemRecord, kept: ItemRecord?) -> ItemRecord {
        guard let kept, kept.item.kind == .file, record.item.kind == .file,
            kept.item.version.content == record.item.version.content
        else { return record }
        var current = record
        current.item.size = kept.item.size
        current.item.contentModificationDate = kept.item.contentModificationDate
        return current
    }

    /// The record kept for `inode`, or else the one a recent lookup read, kept from now on if no
    /// store change was reported since that lookup read it; nil when neither.
    func keepRecentLookup(_ inode: InodeNumber) -> ItemRecord? {
        state.withLock { state in
            if let kept = state.records[inode] { return kept }
            guard let index = state.recentLookups.firstIndex(where: { $0.record.inode == inode.rawValue }) else {
                return nil
            }
            let recent = state.recentLookups.remove(at: index)
            guard state.holds(inode), recent.epoch == state.epoch else { return nil }
            state.records[inode] = recent.record
            return recent.record
        }
    }

    /// The store's record of an item changed outside a request (an upload's outcome): a held inode
    /// keeps the new one.
    func replace(_ record: ItemRecord) {
        let inode = InodeNumber(record.inode)
        state.withLock { state in
            state.epoch += 1
            if state.holds(inode) { state.records[inode] = record }
        }
    }

    /// Read before reading a record from the store that `keep` may keep.
    var epoch: UInt64 { state.withLock { $0.epoch } }

    /// Keeps `stored`, read from the store after `epoch` was read, as its held inode's record,
    /// unless one is kept already. False, keeping nothing, when a store change was reported since
    /// `epoch`: the record may be older than that change, which a kept record would then miss.
    func keep(_ stored: ItemRecord, readAt epoch: UInt64) -> Bool {
        let inode = InodeNumber(stored.inode)
        return state.withLock { state in
            guard state.holds(inode), state.records[inode] == nil else { return true }
            guard state.epoch == epoch else { return false }
            state.records[inode] = stored
            return true
        }
    }

    /// Changes the kept record of a held inode in place (a write's new size); nil when memory
    /// keeps none.
    func update(_ inode: InodeNumber, _ change: (inout Item) -> Void) -> ItemRecord? {
        state.withLock { state in
            guard state.holds(inode), var record = state.records[inode] else { return nil }
            change(&record.item)
            state.records[inode] = record
            return record
        }
    }

    /// A remote change replaced the record `before` with `after`: a held inode takes it, unless a
    /// local change replaced its kept record meanwhile. True when the kernel holds the inode.
    func refresh(_ after: ItemRecord, replacing before: ItemRecord) -> Bool {
        state.withLock { state in
            let inode = InodeNumber(after.inode)
            state.epoch += 1
            guard state.holds(inode) else { return false }
            if state.records[inode].map({ $0 == before }) ?? true { state.records[inode] = after }
            return true
        }
    }

    /// After the remote gave an item its identifier: every kept record that named the old one
    /// (the item itself, its children) names the new one.
    func replaceIdentifier(_ old: ItemIdentifier, with remote: RemoteIdentity, inode: InodeNumber, kind: ItemKind) {
        state.withLock { state in
            state.epoch += 1
            if var record = state.records[inode] {
                remote.apply(to: &record.item)
                state.records[inode] = record
            }
            // Only a folder has children to rename; scanning (and mutating while iterating, which
            // copied the whole table) for every uploaded file made creating files quadratic.
            guard kind == .directory, remote.identifier != old else { return }
            let children = state.records.compactMap { $0.value.item.parentIdentifier == old ? $0.key : nil }
            for child in children {
                state.records[child]?.item.parentIdentifier = remote.identifier
            }
        }
    }

    /// What `MetadataStore.rebaseIdentifiers` did in the store, for the items the kernel knows:
    /// identifiers and parents that started with `oldPrefix` start with `newPrefix`.
    func rebaseIdentifiers(below oldPrefix: String, onto newPrefix: String) {
        func rebased(_ identifier: ItemIdentifier) -> ItemIdentifier? {
            guard identifier.rawValue.hasPrefix(oldPrefix) else { return nil }
            return ItemIdentifier(newPrefix + identifier.rawValue.dropFirst(oldPrefix.count))
        }
        state.withLock { state in
            state.epoch += 1
            for (inode, record) in state.records {
                var item = record.item
                if let identifier = rebased(item.identifier) { item.identifier = identifier }
                if let parent = rebased(item.parentIdentifier) { item.parentIdentifier = parent }
                if item != record.item { state.records[inode]?.item = item }
            }
        }
    }

    /// Drops `count` kernel references; the inode and its record go when none are left (the root
    /// never does), and then it returns true: the kernel no longer knows `inode` at all.
    func forget(_ inode: InodeNumber, count: UInt64) -> Bool {
        state.withLock { state in
            guard inode != .root, var lookups = state.lookups[inode] else { return false }
            if lookups.decrement(by: count) {
                state.lookups[inode] = nil
                state.records[inode] = nil
                state.recentLookups.removeAll { $0.record.inode == inode.rawValue }
                return true
            } else {
                state.lookups[inode] = lookups
                return false
            }
        }
    }
}
