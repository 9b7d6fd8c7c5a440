import BlockCache
import FileProviderKit
import Foundation
import FuseKit
import Logging
import MetadataStore
import Synchronization
import SystemPackage

/// Replays the journal to the remote (ARCHITECTURE §4).
///
/// It reads the pending entries in journal order and starts those that may run, up to the upload
/// depth at once: a change waits while its file is open for writing, while its parent has no
/// remote identifier yet, and behind any earlier rename or deletion; a rename or deletion waits
/// for everything before it. So creations and edits of different items go in parallel, while
/// whatever frees or takes a name keeps its order.
///
/// Sending waits for the journal to settle: until no change has come for `settle`, or for at
/// most ten times that after the first. A burst of changes (an unpacked archive, `cp -r`) then
/// runs without the uploads taking the CPU from it, and is sent right after (DECISIONS 108); in
/// a burst that goes on, what it made `burstLag` ago is sent one at a time meanwhile, so the
/// remote does not fall ever further behind (DECISIONS 117); `retryNow` sends at once.
///
/// A failed entry stays in the journal and is retried with backoff: soon while the remote is
/// unreachable or busy, rarely when the remote refused it, at once after `retryNow`. Nothing is
/// ever overwritten on the remote: a changed remote version makes the local content a conflict
/// copy beside the remote's, and a taken name makes the local item take a conflict name.
final class Uploader: Sendable {
    /// What `user.fpfs.state` says of an item the uploader is busy with.
    enum ItemState: String, Sendable {
        case uploading
        case error
    }

    private enum Key: Hashable {
        case item(UInt64)
        case deletion(ItemIdentifier)
    }

    /// What an entry the uploader passed over waits for, for `fpfs status`.
    enum Blocker: Sendable, Hashable {
        /// The creation of the folder it lies in (which exists only here).
        case creation(of: ItemIdentifier)
        /// An earlier entry, and whether that one has failed.
        case entry(PendingWork, failed: Bool)
    }

    private let provider: any FileProvider
    private let store: MetadataStore
    private let localFiles: LocalFileFolder
    private let nodes: NodeTable
    private let lister: DirectoryLister
    private let cache: BlockCache
    private let moves: MovesInFlight
    let kernel: KernelCache
    private let depth: Int
    /// How long the journal must be quiet before its changes are sent.
    private let settle: Duration
    /// How long a change waits for a burst that goes on to end before it is sent anyway.
    private let burstLag: Duration
    private let statistics: Statistics
    private let logger: Logger
    private let signal = WakeSignal()
    /// Applies what the remote answered of an item — deleted (true), or to be asked anew — as a
    /// change round would (`ChangeReplicator.applyRemoteState`); set once both exist.
    let remoteState = Mutex<(@Sendable (ItemIdentifier, Bool) async throws -> Void)?>(nil)

    /// Guards the entries in flight, the retry times and the items that last failed for good.
    private struct State {
        /// The entries being sent, and whether each is a rename, move or deletion. Their rows may
        /// be gone from the journal already (an item deleted while its creation is sent), so the
        /// order is kept against these as well.
        var inFlight: [Key: Bool] = [:]
        /// Counts ended sends. A snapshot of the journal read before a send ended still shows that
        /// entry as it was (a creation that is done now), so entries ended after the snapshot's
        /// count are skipped until the next snapshot.
        var ended: UInt64 = 0
        var endedAt: [Key: UInt64] = [:]
        var retryAt: [Key: ContinuousClock.Instant] = [:]
        var refused: Set<UInt64> = []
        /// Entries whose last attempt the remote refused and that are not due again yet.
        var waitingAfterRefusal: Set<Key> = []
        /// When the last change and the first not yet looked at were journalled, while the journal
        /// settles.
        var lastChange: ContinuousClock.Instant?
        var settlingSince: ContinuousClock.Instant?
        /// The journal's sequence at the end of each settling period of a burst still going on,
        /// oldest first.
        var periodEnds: [(at: ContinuousClock.Instant, sequence: Int64)] = []
        /// Entries up to this sequence have waited `burstLag`: they are sent, one at a time, while
        /// the burst goes on, until none is left.
        var overdueThrough: Int64?
        /// The entries the last look at the journal passed over because of another, by sequence.
        var waits: [Int64: Blocker] = [:]
        var loop: Task<Void, Never>?
        /// Told the length of contents sent, whose local copy may now be clean (`onContentsSent`).
        var contentsSent: (@Sendable (UInt64) -> Void)?
    }
    private let state = Mutex(State())

    init(
        provider: any FileProvider, store: MetadataStore, localFiles: LocalFileFolder, nodes: NodeTable,
        lister: DirectoryLister, cache: BlockCache, moves: MovesInFlight, configuration: VFSConfiguration,
        statistics: Statistics, logger: Logger
    ) {
        self.statistics = statistics
        self.provider = provider
        self.store = store
        self.localFiles = localFiles
        self.nodes = nodes
        self.lister = lister
        self.cache = cache
        self.moves = moves
        self.kernel = KernelCache(store: store, logger: logger)
        self.depth = configuration.uploadDepth
        self.settle = configuration.uploadSettle
        self.burstLag = configuration.uploadBurstLag
        self.logger = logger
    }

    func start() {
        state.withLock { state in
            guard state.loop == nil else { return }
            state.loop = Task { await self.run() }
        }
    }

    /// Calls `body` with the length of each file's contents once they are on the remote.
    func onContentsSent(_ body: @escaping @Sendable (UInt64) -> Void) {
        state.withLock { $0.contentsSent = body }
    }

    /// Stops sending; what was not sent stays in the journal for the next mount.
    func stop() async {
        let loop = state.withLock { $0.loop }
        loop?.cancel()
        await loop?.value
    }

    /// Something was journalled, or a writer closed: look at the journal again once it settles.
    /// Only the first change of a settling period wakes the loop; later ones move its end, which
    /// the loop reads when its pause ends (waking it for each would cost every change of a burst
    /// a hop to the loop and a timer of its own).
    func wake() {
        let now = ContinuousClock.now
        let starts = state.withLock { state -> Bool in
            state.lastChange = now
            guard state.settlingSince == nil else { return false }
            state.settlingSince = now
            return true
        }
        if starts { signal.signal() }
    }

    /// Sends and retries every waiting entry now (`fpfs sync`).
    func retryNow() {
        state.withLock { state in
            state.retryAt.removeAll()
            state.waitingAfterRefusal.removeAll()
            state.lastChange = nil
            state.settlingSince = nil
        }
        signal.signal()
    }

    /// Entries the remote refused at their last attempt, waiting for their next (ten minutes, or
    /// `retryNow`).
    var refusedCount: Int { state.withLock { $0.waitingAfterRefusal.count } }

    /// What the entries passed over at the last look at the journal wait for, by sequence.
    var waits: [Int64: Blocker] { state.withLock { $0.waits } }

    func state(of inode: UInt64) -> ItemState? {
        state.withLock { state in
            if state.inFlight[.item(inode)] != nil { return .uploading }
            return state.refused.contains(inode) ? .error : nil
        }
    }

    // MARK: The loop

    /// The sends run in a discarding group: a `TaskGroup` keeps every ended child until its result
    /// is taken, and this loop never takes one, so each send's task (10–27 KB with its stack's
    /// slabs) stayed until unmount (DECISIONS 204).
    private func run() async {
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                // Entries journalled after `due` wait for their own settling period, which ends
                // after `pause`.
                var due: Int64?
                var pause: Duration?
                switch settling() {
                case .idle:
                    break
                case .ended:
                    if let sequence = try? await store.journalState().sequence {
                        state.withLock { $0.periodEnds.append((.now, sequence)) }
                    }
                case .pausing(let left):
                    guard let overdue = overdue() else {
                        await signal.wait(timeout: left)
                        continue
                    }
                    (due, pause) = (overdue, left)
                }
                // What a long burst made `burstLag` ago goes out one at a time while it goes on:
                // the burst keeps most of the CPU, and the remote does not fall further behind.
                let slots = due == nil ? depth : 1
                // Every journalled change wakes the loop; while every slot is taken nothing could
                // start, and reading the journal's head again would cost a window of records.
                let (snapshot, full) = state.withLock { ($0.ended, $0.inFlight.count >= slots) }
                if full {
                    await signal.wait(timeout: nextRetryDelay())
                    continue
                }
                let work: [PendingWork]
                do {
                    work = try await store.pendingWork(limit: window)
                } catch {
                    // Cancelled by `stop`: the loop ends, with nothing to say.
                    if !(error is CancellationError) { logger.error("cannot read the journal: \(error)") }
                    work = []
                }
                if let due, !work.contains(where: { $0.sequence <= due }) {
                    // What was overdue is sent (or being sent).
                    state.withLock { $0.overdueThrough = nil }
                    continue
                }
                for entry in runnable(work, readAfter: snapshot, through: due, slots: slots) {
                    group.addTask {
                        await self.perform(entry)
                        self.state.withLock { state in
                            let key = Self.key(of: entry)
                            state.inFlight[key] = nil
                            state.ended += 1
                            state.endedAt[key] = state.ended
                        }
                        self.signal.signal()
                    }
                }
                await signal.wait(timeout: pause.map { min($0, nextRetryDelay()) } ?? nextRetryDelay())
            }
            group.cancelAll()
        }
    }

    /// The entries to start now, marked in flight, while fewer than `slots` are. `readAfter` is the
    /// count of ended sends when the journal was read; entries journalled after `due` (when given)
    /// are not started.
    private func runnable(_ work: [PendingWork], readAfter snapshot: UInt64, through due: Int64?, slots: Int)
        -> [PendingWork]
    {
        let now = ContinuousClock.now
        return state.withLock { state in
            var chosen: [PendingWork] = []
            var earlierPending = false
            var earlierBarrier = false
            var firstPending: PendingWork?
            var lastBarrier: PendingWork?
            state.waits = [:]
            // Sends that ended before the read are in this snapshot already.
            state.endedAt = state.endedAt.filter { $0.value > snapshot }
            // A refused entry the journal no longer holds (its item deleted here) waits for nothing.
            if work.count < window { state.waitingAfterRefusal.formIntersection(work.map(Self.key)) }
            for entry in work {
                let key = Self.key(of: entry)
                if state.endedAt[key] != nil { continue }
                let barrier = Self.isBarrier(entry)
                defer {
                    earlierPending = true
                    if firstPending == nil { firstPending = entry }
                    if barrier {
                        earlierBarrier = true
                        lastBarrier = entry
                    }
                }
                guard state.inFlight.count < slots else { break }
                // A folder's creation comes before what is inside it, and may be newer than `due`.
                if let due, entry.sequence > due { continue }
                let earlier = barrier ? firstPending : lastBarrier
                if let earlier, barrier ? earlierPending : earlierBarrier {
                    state.waits[entry.sequence] = .entry(
                        earlier, failed: state.waitingAfterRefusal.contains(Self.key(of: earlier)))
                    continue
                }
                if barrier ? !state.inFlight.isEmpty : state.inFlight.values.contains(true) { continue }
                if state.inFlight[key] != nil { continue }
                if let time = state.retryAt[key], time > now { continue }
                if case .change(let change, let parent) = entry {
                    if parent.isLocal {
                        state.waits[entry.sequence] = .creation(of: parent)
                        continue
                    }
                    if localFiles.isOpenForWriting(change.inode) { continue }
                }
                state.inFlight[key] = barrier
                chosen.append(entry)
            }
            return chosen
        }
    }

    /// The sequence up to which entries are overdue while a burst goes on: those journalled before
    /// a period that ended `burstLag` ago or more.
    private func overdue() -> Int64? {
        let now = ContinuousClock.now
        return state.withLock { state in
            let old = state.periodEnds.prefix { now - $0.at >= burstLag }
            if let latest = old.last {
                state.overdueThrough = max(state.overdueThrough ?? latest.sequence, latest.sequence)
                state.periodEnds.removeFirst(old.count)
            }
            return state.overdueThrough
        }
    }

    /// Where the journal's settling stands.
    private enum Settling {
        /// No change since the last period ended: everything in the journal has settled.
        case idle
        /// A period ended just now: everything in the journal has settled.
        case ended
        /// A period runs for this much longer.
        case pausing(Duration)
    }

    /// Where the journal's settling stands; ends a period that is over.
    private func settling() -> Settling {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let last = state.lastChange, let since = state.settlingSince else { return .idle }
            let settled = min(last + settle, since + settle * 10)
            guard settled > now else {
                state.lastChange = nil
                state.settlingSince = nil
                return .ended
            }
            return .pausing(settled - now)
        }
    }

    private func nextRetryDelay() -> Duration {
        let now = ContinuousClock.now
        let next = state.withLock { $0.retryAt.values.filter { $0 > now }.min() }
        return next.map { max($0 - now, .milliseconds(10)) } ?? .seconds(30)
    }

    /// How much of the journal's head the uploader looks at each time: enough to keep the upload
    /// depth busy past entries that must wait, and small, since it is read after every send.
    private var window: Int { max(64, 16 * depth) }

    private static func key(of entry: PendingWork) -> Key {
        switch entry {
        case .change(let change, _): .item(change.inode)
        case .deletion(let deletion): .deletion(deletion.identifier)
        }
    }

    /// Renames, moves and deletions free or take names: they keep their place in the order. A
    /// creation's name is its own, unless it was renamed while being sent: then the remote has it
    /// under the old name until the rename follows. So it may after an attempt whose answer was
    /// lost, the item moved since: the retry looks there for what it made, and a send beside it
    /// to that name would make both take what is there for the other's (DECISIONS 322).
    private static func isBarrier(_ entry: PendingWork) -> Bool {
        switch entry {
        case .deletion: true
        case .change(let change, _):
            (!change.isCreation || !change.sending.isEmpty || change.leftASentPlace)
                && !change.fields.isDisjoint(with: [.filename, .parentIdentifier])
        }
    }

    // MARK: Performing entries

    private func perform(_ entry: PendingWork) async {
        do {
            switch entry {
            case .change(let change, _):
                guard
                    let (change, record) = try await store.beginSending(
                        inode: change.inode, sequence: change.sequence)
                else { break }
                let move = beginMove(change, of: record)
                defer { if let move { moves.end(move) } }
                // The path costs a read of the store: only when the line is written.
                if logger.logLevel <= .debug {
                    let what = await describe(entry)
                    logger.debug(
                        "sending \(what): \(change.isCreation ? "creation, " : "")fields \(change.fields), identifier \(record.identifier), parent \(record.item.parentIdentifier), attempt \(change.attempts + 1)"
                    )
                }
                try await send(change, of: record)
            case .deletion(let deletion):
                let what = MetadataStore.logName(of: deletion)
                logger.debug("sending the deletion of \(what), attempt \(deletion.attempts + 1)")
                try await send(deletion)
            }
            state.withLock { state in
                state.retryAt[Self.key(of: entry)] = nil
                state.waitingAfterRefusal.remove(Self.key(of: entry))
                if case .change(let change, _) = entry { state.refused.remove(change.inode) }
            }
            statistics.update { $0.uploads.sent += 1 }
        } catch is CancellationError {
            return
        } catch {
            await recordFailure(of: entry, error: error)
        }
    }

    /// Notes a move about to be sent on a remote whose identifiers are places: a fetch that meets
    /// it on the remote waits for it (`MovesInFlight`).
    private func beginMove(_ change: PendingChange, of record: ItemRecord) -> UInt64? {
        guard let places = provider as? any PathIdentifying, !change.isCreation,
            !change.fields.isDisjoint(with: [.filename, .parentIdentifier])
        else { return nil }
        let prefix = record.item.kind == .directory ? places.identifierPrefix(below: record.identifier) : nil
        return moves.begin(record.identifier, prefix: prefix)
    }

    private func send(_ change: PendingChange, of record: ItemRecord) async throws {
        var item = record.item
        var snapshot: FilePath?
        defer { if let snapshot { localFiles.discardSnapshot(snapshot, of: record.inode) } }
        if item.kind == .file, change.isCreation || change.fields.contains(.contents) {
            // Deleted here since the journal was read: nothing to send.
            guard try await store.record(inode: record.inode) != nil else { return }
            if change.isCreation, try await localFiles.length(of: record.inode) == 0 {
                // Created empty: a creation without contents makes an empty file, so there is
                // nothing to copy (a file made and deleted per empty file slows the cache disk).
                item.size = 0
            } else {
                let copy = try await localFiles.snapshot(record.inode, tag: change.sequence)
                snapshot = copy.path
                item.size = copy.size
            }
        }
        if change.fields.contains(.extendedAttributes) {
            item.extendedAttributes = try await store.userAttributes(inode: record.inode)
        }
        guard let contents = snapshot.map({ URL(fileURLWithPath: $0.string) }) else {
            do {
                return try await deliver(item, change: change, record: record, contents: nil, snapshot: &snapshot)
            } catch {
                // A file created empty went without contents: what it sent is noted all the same
                // (a daemon that stops notes it at its next start, DECISIONS 319).
                if item.kind == .file, change.isCreation, !Task.isCancelled {
                    await noteSent({ ContentDigest.empty }, of: record.inode)
                }
                throw error
            }
        }
        // Contents go up: `fpfs status` shows their progress.
        let upload = statistics.uploadStarted(name: item.filename.description, length: item.size)
        var succeeded = false
        defer {
            UploadProgress.stopReporting(for: contents)
            statistics.uploadEnded(upload, succeeded: succeeded)
        }
        let statistics = self.statistics
        UploadProgress.startReporting(for: contents) { statistics.uploadProgressed(upload, bytes: $0) }
        do {
            try await deliver(item, change: change, record: record, contents: contents, snapshot: &snapshot)
        } catch {
            // The daemon stops: the snapshot stays, and the next start notes what it holds.
            if Task.isCancelled {
                snapshot = nil
            } else if let snapshot {
                await noteSent({ try await ContentDigest.of(snapshot) }, of: record.inode)
            }
            throw error
        }
        succeeded = true
        state.withLock { $0.contentsSent }?(item.size)
    }

    /// Sends a prepared change: `createItem`, or `modifyItem` with the conflict, deletion and
    /// collision paths.
    private func deliver(
        _ item: Item, change: PendingChange, record: ItemRecord, contents: URL?, snapshot: inout FilePath?
    ) async throws {
        if change.isCreation {
            try await create(item, change: change, inode: record.inode, contents: contents)
            return
        }
        do {
            try await modify(
                item, fields: change.fields, of: record, contents: contents,
                options: change.attempts > 0 ? [.mayAlreadyExist] : [])
        } catch ProviderError.conflict(let current) {
            guard let contents else { throw ProviderError.conflict(remote: nil) }
            let current = if let current { current } else { try await provider.item(for: record.identifier) }
            var based = record
            based.item.version = current.version
            if change.attempts > 0, try await ours(current, bytes: contents) {
                // An earlier attempt got there (the daemon stopped after the bytes left): the
                // remote's version is this change's own, and only the other fields remain, sent
                // as any change is, a move aside in a swap included (DECISIONS 289).
                var rest = change
                rest.fields.remove(.contents)
                return try await deliver(item, change: rest, record: based, contents: nil, snapshot: &snapshot)
            }
            // Bytes an earlier send left before the file changed here again, its answer lost (or
            // taken for another's, 302): the remote's version is this file's own, and the bytes
            // now go on top of it (DECISIONS 307).
            if current.version != record.item.version, try await holdsEarlierSend(current, of: record.inode) {
                return try await deliver(item, change: change, record: based, contents: contents, snapshot: &snapshot)
            }
            try await keepBoth(record, localContents: contents, snapshot: &snapshot)
        } catch ProviderError.noSuchItem {
            if change.attempts > 0,
                let aside = try await movedAside(item, fields: change.fields, of: record, contents: contents)
            {
                // An earlier attempt moved it aside and its answer was lost (kill -9, an outage):
                // it is there, and takes its own name when the journal reaches it again.
                return try await adopt(aside, of: record, kind: item.kind, stillPending: Self.leftAside(change.fields))
            }
            if change.attempts > 0,
                let moved = try await movedEarlier(item, fields: change.fields, of: record, contents: contents)
            {
                // An earlier attempt moved it to a place it has left here since (a swap before
                // the retry), its answer lost: it moves on from there (DECISIONS 314).
                return try await adopt(moved, of: record, kind: item.kind, stillPending: change.fields)
            }
            // Deleted on the remote while changed here: as if the change round had seen it first,
            // what holds local work (bytes written here) is kept and created anew, the rest goes
            // (a rename of a file whose bytes never were local cannot bring them back).
            guard let applyRemoteState = remoteState.withLock({ $0 }) else { throw ProviderError.noSuchItem(nil) }
            let path = await store.logName(inode: record.inode)
            logger.notice("\(path) was deleted on the remote while changed here")
            try await applyRemoteState(record.identifier, true)
        } catch ProviderError.filenameCollision(let existing) {
            guard try await journalFrees(existing, for: item) else {
                return try await takeConflictName(record, besides: existing)
            }
            // Taken by an item the journal moves away later (a swap through a temporary name):
            // this one moves aside and takes its name when the journal reaches it again.
            var aside = item
            aside.filename = TemporaryName.make(for: item.filename, inode: record.inode)
            try await store.noteSentPlace(inode: record.inode, folder: aside.parentIdentifier, filename: aside.filename)
            try await modify(
                aside, fields: change.fields.intersection(.parentIdentifier).union(.filename), of: record,
                contents: nil, options: [], stillPending: Self.leftAside(change.fields))
        }
    }

    /// What stays journalled of a change whose item waits under a temporary name in its target
    /// folder: its name and the fields not sent, not the folder, so that the rest is a rename in
    /// place, which what moves into the item need not wait for (DECISIONS 286).
    private static func leftAside(_ fields: ItemFields) -> ItemFields {
        fields.subtracting(.parentIdentifier).union(.filename)
    }

    /// Applies `fields` of `item` on the remote and records the result; `stillPending` stay in
    /// the journal.
    private func modify(
        _ item: Item, fields: ItemFields, of record: ItemRecord, contents: URL?, options: ModifyItemOptions,
        stillPending: ItemFields = []
    ) async throws {
        let remote = try await provider.modifyItem(
            item, baseVersion: record.item.version, changedFields: fields, contents: contents, options: options)
        let overtaken = contents != nil && Self.isOvertaken(remote, sending: item)
        if overtaken { await noteOvertaken(record.inode) }
        try await adopt(remote, of: record, kind: item.kind, stillPending: stillPending, overtaken: overtaken)
    }

    /// Records that the item of `record` is now `remote` on the remote; `stillPending` stay in the
    /// journal. With `overtaken`, `remote` holds another's bytes (`isOvertaken`).
    private func adopt(
        _ remote: Item, of record: ItemRecord, kind: ItemKind, stillPending: ItemFields, overtaken: Bool = false
    ) async throws {
        let moved = kind == .directory ? movedPrefixes(of: record.identifier, to: remote.identifier) : nil
        let completed = try await store.completeModification(
            inode: record.inode, previousIdentifier: record.identifier, remote: remote, stillPending: stillPending,
            overtaken: overtaken, movingPrefix: moved)
        await forgetDisplaced(completed.displaced)
        if let identity = completed.identity {
            nodes.replaceIdentifier(record.identifier, with: identity, inode: InodeNumber(record.inode), kind: kind)
            await followInCache(record.identifier, identity.identifier)
            // The file's contents moved on on the remote, and the store kept the version it knew.
            // A round need not report the new one: a file the remote moved onto this one, moved
            // back here to the name it had, is as the last round saw it there. So it is applied
            // now, as a round would (DECISIONS 293); the change itself is sent whatever comes of it.
            // Overtaken contents are sent again instead, and meet the remote's as a conflict.
            if kind == .file, !overtaken, identity.version.content != remote.version.content {
                do {
                    try await remoteState.withLock({ $0 })?(remote.identifier, false)
                } catch {
                    let path = await store.logName(inode: record.inode)
                    logger.warning("cannot take the remote's new contents of \(path): \(error)")
                }
            }
        }
        if let moved { try await followMove(moved, to: remote.identifier) }
    }

    /// Whether `remote`, the answer to a send of the bytes of the file `item`, holds another's
    /// instead: a file of another size than was sent. A remote answers a write with a look at the
    /// item made after it, and another's write that lands in between is what it sees. The store
    /// then keeps the item's content version and the contents pending, so that the next attempt
    /// meets that write as a conflict and keeps both (DECISIONS 302, checker seed 15018 on
    /// Apache). Another's write of the very same size is not told apart so.
    private static func isOvertaken(_ remote: Item, sending item: Item) -> Bool {
        item.kind == .file && remote.kind == .file && remote.size != item.size
    }

    /// Logs that the answer to a send of `inode`'s bytes held another's.
    private func noteOvertaken(_ inode: UInt64) async {
        let path = await store.logName(inode: inode)
        logger.notice("\(path) was written on the remote by another as it was sent; sending it again")
    }

    /// The item of `record` under the temporary name a move of it to `item`'s name takes while
    /// that name is another's (a swap), when an earlier attempt put it there (`isMoved`).
    private func movedAside(_ item: Item, fields: ItemFields, of record: ItemRecord, contents: URL?) async throws
        -> Item?
    {
        guard !fields.isDisjoint(with: [.filename, .parentIdentifier]), !item.parentIdentifier.isLocal,
            let found = try await child(
                named: TemporaryName.make(for: item.filename, inode: record.inode), of: item.parentIdentifier),
            found.kind == item.kind
        else { return nil }
        return try await isMoved(found, of: record, fields: fields, contents: contents) ? found : nil
    }

    /// The item of `record` at a place an earlier attempt of its move sent it to and the item has
    /// left here since (a swap before the retry), its answer lost, when the store knows it as no
    /// other item (DECISIONS 314).
    private func movedEarlier(_ item: Item, fields: ItemFields, of record: ItemRecord, contents: URL?) async throws
        -> Item?
    {
        guard !fields.isDisjoint(with: [.filename, .parentIdentifier]) else { return nil }
        for place in try await store.earlierSentPlaces(inode: record.inode) where !place.parent.isLocal {
            // A folder gone meanwhile holds nothing of it.
            guard let found = try? await child(named: place.filename, of: place.parent), found.kind == item.kind,
                try await !isAnotherItem(found.identifier, than: record.inode),
                try await isMoved(found, of: record, fields: fields, contents: contents)
            else { continue }
            return found
        }
        return nil
    }

    /// Whether `found`, of the item's kind, is the item of `record` moved by an earlier attempt of
    /// `fields`: a folder, or a file with the version the move began from (DECISIONS 285) or with
    /// the `contents` being sent, or bytes an earlier send left (DECISIONS 307). A change of bytes
    /// and name sends the bytes first on WebDAV (`PUT`, then `MOVE`), so the file moved holds the
    /// new bytes (DECISIONS 297).
    private func isMoved(_ found: Item, of record: ItemRecord, fields: ItemFields, contents: URL?) async throws
        -> Bool
    {
        if found.kind == .directory || found.version.content == record.item.version.content { return true }
        guard fields.contains(.contents), let contents else { return false }
        if try await ours(found, bytes: contents) { return true }
        return try await holdsEarlierSend(found, of: record.inode)
    }

    /// Whether the content of the remote item `remote` is exactly the bytes of `contents`: what an
    /// earlier attempt of this change sent, not another's version.
    private func ours(_ remote: Item, bytes contents: URL?) async throws -> Bool {
        // Nothing to copy: a file created empty (`send` leaves such a creation without contents).
        guard let contents else { return remote.kind == .file && remote.size == 0 }
        let size = try await BlockingIO.run {
            try FileManager.default.attributesOfItem(atPath: contents.path(percentEncoded: false))[.size] as? UInt64
        }
        guard let size else { return false }
        return try await SameBytesSink.remoteHolds(
            contents, size: size, identifier: remote.identifier, remote: remote, provider: provider)
    }

    /// Whether the remote item `remote` holds bytes an earlier send of `inode`'s contents left
    /// there, its answer lost: the file's own, from before it changed here again (DECISIONS 307),
    /// or an earlier send's of an item that was `remote`'s identifier and left it, deleted here
    /// (DECISIONS 319) or moved away (DECISIONS 321).
    private func holdsEarlierSend(_ remote: Item, of inode: UInt64) async throws -> Bool {
        let sent = try await store.sentContents(inode: inode, orAt: remote.identifier)
        return try await ContentDigest.remoteHoldsOne(of: sent, remote: remote, provider: provider)
    }

    /// Whether the remote item `remote` holds bytes an earlier send left there of the item that
    /// `deletion` deletes (DECISIONS 307).
    private func holdsEarlierSend(_ remote: Item, of deletion: PendingDeletion) async throws -> Bool {
        guard let inode = deletion.inode else { return false }
        return try await holdsEarlierSend(remote, of: inode)
    }

    /// Records what a send of `inode` carried (`sent`: its snapshot's digest, or an empty file's),
    /// after a send that may have left it on the remote without saying so.
    private func noteSent(_ sent: @Sendable () async throws -> SentContent, of inode: UInt64) async {
        do {
            try await store.noteSentContent(sent(), inode: inode)
        } catch {
            logger.warning("cannot note what was sent of inode \(inode): \(error)")
        }
    }

    /// Whether the store knows the remote item `identifier` as an item other than `inode`: then it
    /// is that item, whatever its bytes, and never what a lost attempt of the creation of `inode`
    /// made. An empty file made here where another empty file had been sent (and moved on here)
    /// took that one's identifier, and the other item, written meanwhile, left the store
    /// (DECISIONS 295, checker seed 12029).
    private func isAnotherItem(_ identifier: ItemIdentifier, than inode: UInt64) async throws -> Bool {
        guard let known = try await store.record(identifier: identifier) else { return false }
        return known.inode != inode
    }

    /// Whether the remote item `existing` that holds `item`'s name gives it up later in the
    /// journal (deleted or moved here, not yet sent).
    private func journalFrees(_ existing: ItemIdentifier?, for item: Item) async throws -> Bool {
        guard let existing else { return false }
        return try await store.journalFrees(existing, in: item.parentIdentifier, as: item.filename)
    }

    private func create(_ item: Item, change: PendingChange, inode: UInt64, contents: URL?) async throws {
        let options: CreateItemOptions = change.attempts > 0 ? [.mayAlreadyExist] : []
        if change.attempts > 0, let made = try await madeElsewhere(item, inode: inode, contents: contents) {
            // An earlier attempt made it where the item was then (its answer lost to a kill -9 or
            // an outage): that one is the item, and everything goes again as its change, a move
            // to its place now included (DECISIONS 290).
            return try await completeCreation(of: item, inode: inode, remote: made, stillPending: change.fields)
        }
        let remote: Item
        var stillPending: ItemFields = []
        do {
            remote = try await provider.createItem(
                basedOn: item, fields: change.fields, contents: contents, options: options)
        } catch ProviderError.filenameCollision(let existing) {
            if change.attempts > 0, let existing, try await !isAnotherItem(existing, than: inode) {
                // An earlier attempt made it (the daemon stopped after the bytes left).
                if item.kind == .file {
                    let found = try await provider.item(for: existing)
                    if try await ours(found, bytes: contents) {
                        return try await completeCreation(of: item, inode: inode, remote: found)
                    }
                    // With bytes sent before the file changed here again: they go again as its
                    // change (DECISIONS 307).
                    if try await holdsEarlierSend(found, of: inode) {
                        return try await completeCreation(
                            of: item, inode: inode, remote: found,
                            stillPending: change.fields.subtracting([.filename, .parentIdentifier]))
                    }
                }
                // A folder it made is empty: what the folder holds here is made after it. Its
                // times and permissions go again as its change (DECISIONS 304).
                if item.kind == .directory, let made = try await emptyFolder(existing) {
                    return try await completeCreation(
                        of: item, inode: inode, remote: made,
                        stillPending: change.fields.subtracting([.filename, .parentIdentifier]))
                }
            }
            // Nothing was made there: what holds the name is listed as another's (DECISIONS 305).
            try await store.forgetSentPlace(inode: inode, folder: item.parentIdentifier, filename: item.filename)
            guard try await journalFrees(existing, for: item) else {
                guard let record = try await store.record(inode: inode) else { return }
                return try await takeConflictName(record, besides: existing)
            }
            // Taken by an item the journal moves away later (a folder's creation goes before what
            // it holds, and may pass the rename that frees its name): it is made under a
            // temporary name and takes its own when the journal reaches it again.
            var aside = item
            aside.filename = TemporaryName.make(for: item.filename, inode: inode)
            // Where a lost answer may leave it: the retry looks there first (`madeElsewhere`),
            // and no round learns it as another's meanwhile (DECISIONS 311).
            try await store.noteSentPlace(inode: inode, folder: aside.parentIdentifier, filename: aside.filename)
            remote = try await provider.createItem(
                basedOn: aside, fields: change.fields, contents: contents, options: options)
            stillPending = [.filename]
        }
        let overtaken = Self.isOvertaken(remote, sending: item)
        if overtaken { await noteOvertaken(inode) }
        try await completeCreation(
            of: item, inode: inode, remote: remote, stillPending: stillPending, overtaken: overtaken)
    }

    /// What an earlier attempt of the creation of `item` made at a place the item has left since:
    /// a file there with the item's bytes or bytes an earlier send left (DECISIONS 307), or empty
    /// (a file created empty is sent without contents, DECISIONS 282), or an empty folder.
    private func madeElsewhere(_ item: Item, inode: UInt64, contents: URL?) async throws -> Item? {
        guard item.kind != .symlink else { return nil }
        for place in try await store.earlierSentPlaces(inode: inode) {
            // A folder gone meanwhile holds nothing of it.
            guard let found = try? await child(named: place.filename, of: place.parent), found.kind == item.kind,
                try await !isAnotherItem(found.identifier, than: inode)
            else { continue }
            switch found.kind {
            case .file:
                if found.size == 0 { return found }
                if contents != nil, try await ours(found, bytes: contents) { return found }
                if try await holdsEarlierSend(found, of: inode) { return found }
            default:
                if try await isEmptyFolder(found) { return found }
            }
        }
        return nil
    }

    /// The remote item `identifier` when it is a folder that holds nothing.
    private func emptyFolder(_ identifier: ItemIdentifier) async throws -> Item? {
        let found = try await provider.item(for: identifier)
        return try await isEmptyFolder(found) ? found : nil
    }

    private func isEmptyFolder(_ item: Item) async throws -> Bool {
        guard item.kind == .directory else { return false }
        return try await firstChild(of: item.identifier, where: { _ in true }) == nil
    }

    /// Records that the creation of `item` made `remote`. Deleted here while it was being created,
    /// the item has a deletion in the journal instead, which now names `remote`: the bytes kept
    /// to find it by its place are not needed.
    private func completeCreation(
        of item: Item, inode: UInt64, remote: Item, stillPending: ItemFields = [], overtaken: Bool = false
    ) async throws {
        let completed = try await store.completeCreation(
            inode: inode, localIdentifier: item.identifier, remote: remote, stillPending: stillPending,
            overtaken: overtaken)
        await forgetDisplaced(completed.displaced)
        if let identity = completed.identity {
            nodes.replaceIdentifier(item.identifier, with: identity, inode: InodeNumber(inode), kind: item.kind)
            await followInCache(item.identifier, identity.identifier)
        } else {
            localFiles.discardDeleted(item.identifier)
        }
    }

    /// Items a round learned from what a send made of an item deleted here meanwhile left the
    /// store with the send's answer (`CompletedSend.displaced`): their cached contents go, and the
    /// kernel forgets their names.
    private func forgetDisplaced(_ displaced: [ItemRecord]) async {
        for record in displaced {
            if record.item.kind == .file { await cache.discard(record.identifier) }
            var parent = InodeNumber.root
            if record.item.parentIdentifier != .rootContainer {
                guard let folder = try? await store.record(identifier: record.item.parentIdentifier) else { continue }
                parent = InodeNumber(folder.inode)
            }
            guard nodes.holds(parent) else { continue }
            await kernel.notifyDelete(parent: parent, child: InodeNumber(record.inode), name: record.item.filename.bytes)
        }
    }

    /// The identifier prefixes below `folder` and below `moved`, its identifier after its move, on
    /// a remote whose identifiers are places and so changed for every item below the folder there;
    /// nil elsewhere, or when the move kept the identifier.
    private func movedPrefixes(of folder: ItemIdentifier, to moved: ItemIdentifier) -> (old: String, new: String)? {
        guard folder != moved, let places = provider as? any PathIdentifying,
            let old = places.identifierPrefix(below: folder), let new = places.identifierPrefix(below: moved)
        else { return nil }
        return (old, new)
    }

    /// A remote whose identifiers are places gave a moved folder a new identifier, and so every
    /// item that was below it there: they take theirs at once, by prefix, wherever they are here
    /// (DECISIONS 280), in the store with the folder's (308), here in the kept records and the
    /// cache. What the remote changed below the folder since the last round, a round reports under
    /// the identifiers the move replaced, and cannot apply: the folder and the folders below it are
    /// listed again at their next use (DECISIONS 298).
    private func followMove(_ prefixes: (old: String, new: String), to moved: ItemIdentifier) async throws {
        let (old, new) = prefixes
        nodes.rebaseIdentifiers(below: old, onto: new)
        await followInCache { $0.rawValue.hasPrefix(old) ? ItemIdentifier(new + $0.rawValue.dropFirst(old.count)) : nil }
        try await lister.markStale([moved] + store.listedDirectories(below: new))
    }

    /// The block cache gives the content of the item that took `new` in place of `old` its new
    /// identifier.
    private func followInCache(_ old: ItemIdentifier, _ new: ItemIdentifier) async {
        guard new != old else { return }
        do {
            try await cache.followIdentifier(old, to: new)
        } catch {
            logger.warning("cannot give cached contents the identifiers their items now have: \(error)")
        }
    }

    /// The block cache gives cached contents the identifiers `rename` makes of theirs
    /// (DECISIONS 303).
    private func followInCache(_ rename: (ItemIdentifier) -> ItemIdentifier?) async {
        do {
            try await cache.followIdentifiers(renaming: rename)
        } catch {
            logger.warning("cannot give cached contents the identifiers their items now have: \(error)")
        }
    }

    /// The remote changed the file since the local edit began: the local content goes up as a
    /// conflict copy beside it, and the original takes the remote's version. Nothing is lost.
    private func keepBoth(_ record: ItemRecord, localContents: URL, snapshot: inout FilePath?) async throws {
        var copy = record.item
        copy.filename = ConflictName.make(for: record.item.filename)
        let fields: ItemFields = [.filename, .parentIdentifier, .contents, .contentModificationDate, .permissions]
        let uploaded = try await provider.createItem(
            basedOn: copy, fields: fields, contents: localContents, options: [])
        var stored = uploaded
        stored.size = copy.size
        let copyRecord = try await store.insertConflictCopy(stored)
        if let moved = snapshot {
            try await localFiles.adoptConflictCopy(copyRecord.inode, moving: moved)
            snapshot = nil
        }
        let latest = try await provider.item(for: record.identifier)
        let replaced = try await store.replaceWithRemote(inode: record.inode, remote: latest)
        await localFiles.remove(record.inode)
        nodes.replace(replaced)
        await kernel.invalidateContent(of: InodeNumber(record.inode))
        let path = await store.logName(inode: record.inode)
        logger.notice("\(path) changed on the remote and here; kept the local one as \(copy.filename)")
    }

    /// The name is taken on the remote, by `holder` when the remote said which: the local item
    /// takes a conflict name (journalled, so the next attempt uses it) rather than replace what is
    /// there, and the holder shows at its name here. A listing that ran while the local item held
    /// the name left it out (a creation offline in a folder never listed, DECISIONS 182), and no
    /// round reports an item that did not change: it stayed out of the mount for good.
    private func takeConflictName(_ record: ItemRecord, besides holder: ItemIdentifier?) async throws {
        var item = record.item
        item.filename = ConflictName.make(for: record.item.filename)
        guard
            let saved = try await store.saveLocalChange(
                item, inode: record.inode, fields: [.filename], localContent: localFiles.hasContent(record.inode))
        else { return }
        try await store.requeueSending(inode: record.inode)
        nodes.replace(saved)
        if let parent = try await store.record(identifier: item.parentIdentifier) {
            await kernel.invalidateEntry(parent: InodeNumber(parent.inode), name: record.item.filename.bytes)
        }
        let path = await store.logName(of: record.item.filename.bytes, inFolder: item.parentIdentifier)
        logger.notice("\(path) exists on the remote already; the local one is now \(item.filename)")
        guard let holder, try await store.record(identifier: holder) == nil else { return }
        do {
            try await remoteState.withLock({ $0 })?(holder, false)
        } catch {
            logger.warning("\(path) on the remote shows at the next listing of its folder: \(error)")
        }
    }

    private func send(_ deletion: PendingDeletion) async throws {
        // Still local: the remote never had the item (the creation it waited for failed), or its
        // creation was sent and never confirmed, and the item goes from its place if it is there.
        if deletion.identifier.isLocal {
            if let place = deletion.unconfirmedPlace { try await deleteUnconfirmed(deletion, madeAt: place) }
            try await store.completeDeletion(identifier: deletion.identifier, sequence: deletion.sequence)
            localFiles.discardDeleted(deletion.identifier)
            return
        }
        do {
            try await provider.deleteItem(
                identifier: deletion.identifier, baseVersion: deletion.kind == .directory ? nil : deletion.baseVersion,
                options: deletion.toTrash ? [.toTrash] : [])
        } catch ProviderError.noSuchItem {
            // Gone already, that is what was asked; or moved by a send whose answer was lost, to
            // the place it had here.
            if let place = deletion.unconfirmedPlace { try await deleteUnconfirmed(deletion, movedTo: place) }
        } catch ProviderError.conflict(let known) {
            // Bytes a send of this file left there, its answer lost: the deletion is of them.
            let current = if let known { known } else { try? await provider.item(for: deletion.identifier) }
            if let current, try await holdsEarlierSend(current, of: deletion) {
                try await delete(current, for: deletion)
                return try await store.completeDeletion(identifier: deletion.identifier, sequence: deletion.sequence)
            }
            // Changed on the remote since it was deleted here: the remote's newer version stays.
            logger.notice("\(MetadataStore.logName(of: deletion)) changed on the remote; it was not deleted there")
            try await keepRemote(deletion)
            return
        } catch ProviderError.directoryNotEmpty {
            if try await journalEmpties(deletion.identifier) {
                // What it holds there leaves it later in the journal (a rename merged into a later
                // one of the same item takes the later one's place): the deletion follows it.
                try await store.postponeDeletion(identifier: deletion.identifier, sequence: deletion.sequence)
                return
            }
            // Items were added to it on the remote: they stay, and so does the folder.
            let what = MetadataStore.logName(of: deletion)
            logger.notice("\(what) holds new items on the remote; it was not deleted there")
            try await keepRemote(deletion)
            return
        }
        try await store.completeDeletion(identifier: deletion.identifier, sequence: deletion.sequence)
    }

    /// Deletes what a creation sent and never confirmed made at `place`, if it is that item: a
    /// folder (the remote refuses to delete one that holds items), or a file with the bytes the
    /// item had when deleted here. Anything else there is another's, and stays (DECISIONS 284).
    private func deleteUnconfirmed(_ deletion: PendingDeletion, madeAt place: PendingDeletion.Place) async throws {
        guard !place.parent.isLocal, let found = try await child(named: place.filename, of: place.parent),
            found.kind == deletion.kind,
            try await !store.mayBeAnItemHere(found.identifier, in: place.parent, as: place.filename)
        else { return }
        if found.kind == .file {
            let kept = URL(fileURLWithPath: localFiles.deletedBytes(of: deletion.identifier).string)
            let isKept = try await BlockingIO.run { FileManager.default.fileExists(atPath: kept.path(percentEncoded: false)) }
            // The bytes it had when deleted, or bytes an earlier send left (DECISIONS 307).
            var isOwn = false
            if isKept { isOwn = try await ours(found, bytes: kept) }
            if !isOwn { isOwn = try await holdsEarlierSend(found, of: deletion) }
            guard isOwn else {
                logger.notice("\(place.filename) on the remote is not the file deleted here; it stays there")
                return
            }
        }
        try await delete(found, for: deletion)
    }

    /// Deletes what a move sent and never confirmed made of the file at `place`, if it is that
    /// file: of the version the deletion is based on, which a move keeps. Anything else there
    /// stays, a folder too: one moved there since may be another's (DECISIONS 306).
    private func deleteUnconfirmed(_ deletion: PendingDeletion, movedTo place: PendingDeletion.Place) async throws {
        guard deletion.kind == .file, !place.parent.isLocal,
            let found = try await child(named: place.filename, of: place.parent),
            found.kind == .file, found.version.content == deletion.baseVersion.content,
            try await !store.mayBeAnItemHere(found.identifier, in: place.parent, as: place.filename)
        else { return }
        try await delete(found, for: deletion)
    }

    /// Deletes `found`, the item a deletion here found at a place where it looked for it.
    private func delete(_ found: Item, for deletion: PendingDeletion) async throws {
        do {
            try await provider.deleteItem(
                identifier: found.identifier, baseVersion: found.kind == .directory ? nil : found.version,
                options: deletion.toTrash ? [.toTrash] : [])
        } catch ProviderError.noSuchItem, ProviderError.conflict, ProviderError.directoryNotEmpty {
            // Gone or changed since, or holding items made there: what is there stays.
        }
    }

    /// The item named `filename` in the remote folder `folder`, listed.
    private func child(named filename: Filename, of folder: ItemIdentifier) async throws -> Item? {
        try await firstChild(of: folder) { $0.filename == filename }
    }

    /// The first item of the remote folder `folder`, listed page by page, that `matches`.
    private func firstChild(of folder: ItemIdentifier, where matches: (Item) async throws -> Bool) async throws
        -> Item?
    {
        let enumerator = try await provider.enumerator(for: folder)
        var page = EnumerationPage.initial
        while true {
            let result = try await enumerator.enumerateItems(startingAt: page, suggestedPageSize: 1000)
            for item in result.items where try await matches(item) { return item }
            guard let next = result.nextPage else { return nil }
            page = next
        }
    }

    /// A deletion the remote refused: the item stays there, so it comes back here as the remote
    /// has it now. A round cannot bring it: its walk saw the item while the deletion waited, left
    /// it alone then, and the next walk finds nothing new (a folder deleted here while a file was
    /// made in it there never showed that file again; the checker, seed 2009; DECISIONS 276).
    private func keepRemote(_ deletion: PendingDeletion) async throws {
        try await store.completeDeletion(identifier: deletion.identifier, sequence: deletion.sequence)
        try await remoteState.withLock({ $0 })?(deletion.identifier, false)
    }

    /// Whether every item the remote folder `folder` holds leaves it later in the journal.
    private func journalEmpties(_ folder: ItemIdentifier) async throws -> Bool {
        try await firstChild(of: folder) { item in
            !(try await store.journalFrees(item.identifier, in: folder, as: item.filename))
        } == nil
    }

    // MARK: Failures

    private func recordFailure(of entry: PendingWork, error: any Error) async {
        let transient = Self.isTransient(error)
        let attempts: Int
        switch entry {
        case .change(let change, _): attempts = change.attempts + 1
        case .deletion(let deletion): attempts = deletion.attempts + 1
        }
        let delay: Duration = transient ? .seconds(min(1 << min(attempts - 1, 6), 60)) : .seconds(600)
        state.withLock { state in
            state.retryAt[Self.key(of: entry)] = .now + delay
            if transient {
                state.waitingAfterRefusal.remove(Self.key(of: entry))
            } else {
                state.waitingAfterRefusal.insert(Self.key(of: entry))
            }
            if case .change(let change, _) = entry, !transient { state.refused.insert(change.inode) }
        }
        let message = "\(error)"
        if !transient || attempts == 1 {
            let what = await describe(entry)
            logger.warning("sending \(what) failed (attempt \(attempts)): \(message)")
            statistics.noteProblem("sending \(what) failed: \(message)")
        }
        statistics.update { $0.uploads.failed += 1 }
        do { try await store.recordUploadFailure(of: entry, message: message) } catch {
            logger.error("cannot record an upload failure: \(error)")
        }
    }

    /// An entry as the log and `fpfs status` show it, by the item's path (DECISIONS 242).
    func describe(_ entry: PendingWork) async -> String {
        switch entry {
        case .change(let change, _):
            "the \(change.isCreation ? "creation" : "change") of \(await store.logName(inode: change.inode))"
                + " (inode \(change.inode))"
        case .deletion(let deletion): "the deletion of \(MetadataStore.logName(of: deletion))"
        }
    }

    /// Errors that pass by themselves: the remote away or busy, the cache disk full for now. A full
    /// quota on the remote is not one: it answers every retry alike until someone frees space
    /// (DECISIONS 260).
    private static func isTransient(_ error: any Error) -> Bool {
        switch error {
        case is RemoteTimeout, is StoreDiskFull: return true
        case let error as Errno: return error == .noSpace
        case let error as ProviderError:
            switch error {
            case .serverUnreachable, .cannotSynchronize: return true
            default: return false
            }
        default: return false
        }
    }
}
