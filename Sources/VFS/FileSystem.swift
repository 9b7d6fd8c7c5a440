// VFS: the filesystem. FuseKit hands it requests; it decides how to answer them.
//
// Metadata comes from the MetadataStore, which the DirectoryLister fills from the provider the
// first time a directory is used; the NodeTable counts the inodes the kernel holds and keeps the
// records memory must answer for (directories, files opened or changed since their lookup).
// Contents come from the BlockCache; a read of bytes that are not local starts one fetch for the
// content (ContentFetcher) and waits for just its own bytes to land. Every provider call runs
// under the remote bound, so no request waits on the remote for longer than `remoteTimeout`
// without progress. Errors become errno in one place (ErrnoMapping).
//
// Writes happen locally first and are journalled; the Uploader replays them to the remote
// (FileSystem+Writing, ARCHITECTURE §4). With `isReadOnly` every write-type operation is EROFS.
// Changes made on the remote come in through the ChangeReplicator (ARCHITECTURE §5).

import BlockCache
import FileProviderKit
import FuseKit
import Logging
import MetadataStore
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// One mount's filesystem.
public final class FileSystem: FileSystemOperations {
    public let configuration: VFSConfiguration
    let provider: any FileProvider
    let store: MetadataStore
    let cache: BlockCache
    let logger: Logger
    let nodes: NodeTable
    let lister: DirectoryLister
    let listingAhead: ListingAhead
    let fetcher: ContentFetcher
    let statistics = Statistics()
    let gate: ProcessGate
    let openFiles: HandleTable<OpenFile>
    let passthrough: PassthroughFiles
    let localFiles: LocalFileFolder
    let uploader: Uploader
    let pins: PinDownloader
    let evictor: CacheEvictor
    let replicator: ChangeReplicator
    let epochKeeper: EpochKeeper
    private let openDirectories = HandleTable<OpenDirectory>()
    private let kernelListings = KernelListings()

    /// True when the remote could not be reached at start and the mount serves what the store
    /// and cache hold (ARCHITECTURE §5, offline).
    public let isOffline: Bool

    /// Starts a filesystem over `provider`: asks it for the root item (under the remote bound)
    /// and records it as inode 1. When the remote cannot be reached but the store knows the root
    /// from an earlier mount, starts offline instead.
    public static func start(
        provider: any FileProvider, store: MetadataStore, cache: BlockCache, configuration: VFSConfiguration,
        logger: Logger
    ) async throws -> FileSystem {
        let record: ItemRecord
        var isOffline = false
        do {
            var root = try await Deadline.run(limit: configuration.remoteTimeout) {
                try await provider.item(for: .rootContainer)
            }
            root.identifier = .rootContainer
            root.parentIdentifier = .rootContainer
            record = try await store.saveRoot(root)
        } catch let error where Self.meansUnreachable(error) {
            guard let known = try await store.record(inode: InodeNumber.root.rawValue) else { throw error }
            logger.warning("the remote cannot be reached (\(error)); starting offline")
            record = known
            isOffline = true
        }
        try await store.forgetIdentifierAliases()
        let creationsBeingSent = try await store.fileCreationsBeingSent()
        try await store.requeueSending()
        await noteInterruptedSends(
            under: cache.directory.removingLastComponent(), creations: creationsBeingSent, store: store, logger: logger)
        let localFiles = try LocalFileFolder(
            root: cache.directory.removingLastComponent(), items: try await store.localContentItems(),
            unconfirmedDeletions: try await store.unconfirmedCreationsDeleted())
        try await settleInterruptedWriters(store: store, localFiles: localFiles, logger: logger)
        let fileSystem = FileSystem(
            provider: provider, store: store, cache: cache, localFiles: localFiles, root: record,
            configuration: configuration, isOffline: isOffline, logger: logger)
        fileSystem.uploader.onContentsSent { [evictor = fileSystem.evictor] in evictor.localCopyBecameClean(bytes: $0) }
        // Even a read-only mount sends what an earlier mount left in the journal.
        fileSystem.uploader.start()
        fileSystem.epochKeeper.start(every: configuration.durabilityEpochLength)
        cache.onGrowth { [evictor = fileSystem.evictor] in evictor.wake() }
        fileSystem.evictor.wake(always: true)
        fileSystem.pins.resume()
        if configuration.replicatesChanges {
            // A remount serves what the store knew: the changes made on the remote meanwhile come
            // first, for a while, so that the mount does not show the old state at first. A first
            // mount knows nothing that could be stale: its first round is the first poll, which
            // compares everything it listed by then (DECISIONS 71).
            let remounted = try await store.setting(ChangeReplicator.anchorSetting) != nil
            fileSystem.replicator.start(roundNow: remounted)
            if remounted, !isOffline {
                await fileSystem.replicator.awaitFirstRound(upTo: min(configuration.remoteTimeout, .seconds(10)))
            }
        }
        return fileSystem
    }

    /// True for the errors that mean the remote is away, not that it refused.
    static func meansUnreachable(_ error: any Error) -> Bool {
        if error is RemoteTimeout { return true }
        if case ProviderError.serverUnreachable = error { return true }
        return false
    }

    private init(
        provider: any FileProvider, store: MetadataStore, cache: BlockCache, localFiles: LocalFileFolder,
        root: ItemRecord, configuration: VFSConfiguration, isOffline: Bool, logger: Logger
    ) {
        self.isOffline = isOffline
        self.localFiles = localFiles
        self.provider = provider
        self.store = store
        self.cache = cache
        self.configuration = configuration
        self.logger = logger
        self.nodes = NodeTable(root: root)
        self.passthrough = PassthroughFiles(logger: logger)
        self.lister = DirectoryLister(
            provider: provider, store: store, configuration: configuration, statistics: statistics, logger: logger)
        self.listingAhead = ListingAhead(lister: lister, depth: configuration.listingAheadDepth, logger: logger)
        self.gate = ProcessGate(names: configuration.nonMaterializingProcesses)
        let moves = MovesInFlight()
        self.uploader = Uploader(
            provider: provider, store: store, localFiles: localFiles, nodes: nodes, lister: lister, cache: cache,
            moves: moves, configuration: configuration, statistics: statistics, logger: logger)
        let uploader = self.uploader
        self.fetcher = ContentFetcher(
            provider: provider, cache: cache, store: store, kernel: uploader.kernel, moves: moves,
            configuration: configuration, statistics: statistics, logger: logger)
        let pins = PinDownloader(
            store: store, lister: lister, cache: cache, fetcher: fetcher, localFiles: localFiles, logger: logger)
        self.pins = pins
        self.replicator = ChangeReplicator(
            provider: provider, store: store, cache: cache, localFiles: localFiles, nodes: nodes, lister: lister,
            kernel: uploader.kernel, configuration: configuration, statistics: statistics, logger: logger,
            wakeUploader: { uploader.wake() }, changesApplied: { pins.resume() })
        let replicator = self.replicator
        uploader.remoteState.withLock {
            $0 = { [weak replicator] in try await replicator?.applyRemoteState(of: $0, knownDeleted: $1) }
        }
        lister.remoteState.withLock {
            $0 = { [weak replicator] in try await replicator?.applyRemoteState(of: $0, knownDeleted: false) }
        }
        fetcher.describedItem.withLock { $0 = { [weak replicator] in await replicator?.applyFetched($0) } }
        let openFiles = HandleTable<OpenFile>()
        self.openFiles = openFiles
        self.evictor = CacheEvictor(
            bound: configuration.cacheSize ?? .max, cache: cache, store: store, localFiles: localFiles,
            kernel: uploader.kernel, openFiles: openFiles, logger: logger)
        self.epochKeeper = EpochKeeper(cache: cache, store: store, logger: logger)
    }

    /// What the engine has done since mount.
    public var statisticsSnapshot: StatisticsSnapshot {
        var snapshot = statistics.snapshot
        snapshot.blocked = gate.refusalCounts
        return snapshot
    }

    /// Asks the remote for its changes now and applies them (`fpfs signal`); returns how many
    /// items changed in the mount.
    public func replicateChangesNow() async throws -> Int {
        try await replicator.replicateNow()
    }

    // MARK: Connection

    public func initialize(settings: inout ConnectionSettings) {
        settings.maxWrite = 1 << 20
        settings.maxReadahead = 1 << 20
        // The kernel's read-ahead must be able to keep every fetch slot busy (ARCHITECTURE §7).
        settings.maxBackground = max(settings.maxBackground, UInt16(configuration.pipelineDepth))
        settings.readdirplus = true
        settings.passthrough = configuration.passthrough
    }

    /// Lets running fetches end and record what they brought, flushed to disk (the last durability
    /// epoch closes), stops the uploader (what it has not sent stays in the journal for the next
    /// mount), then lets go of the provider.
    public func shutdown() async {
        await listingAhead.stop()
        await replicator.stop()
        await uploader.stop()
        await pins.stop()
        await fetcher.drain()
        await epochKeeper.stop()
        localFiles.close()
        do { try await cache.saveLastUsed() } catch { logger.error("cannot save the cache's order of use: \(error)") }
        await provider.invalidate()
    }

    // MARK: Names and attributes

    public func lookup(parent: InodeNumber, name: [UInt8], context: RequestContext) async throws -> Entry {
        try await answering {
            let directory = try await self.directory(parent)
            let filename = Filename(bytes: name)
            guard name.count <= Filename.maximumLength else { throw Errno.fileNameTooLong }
            guard filename.isValid else { throw Errno.noSuchFileOrDirectory }
            // A folder the remote cannot list now answers from its local items, and a missing name
            // is not cached: `open(O_CREAT)` and `mkdir` look the name up first and must go on to
            // make it (local first, DECISIONS 182), and the next lookup asks the remote again.
            let listed = try await self.lister.listedUnlessUnreachable(directory.identifier)
            let epoch = self.nodes.epoch
            guard let child = try await self.store.child(ofFolder: parent.rawValue, named: filename) else {
                return .negative(timeout: listed ? self.configuration.negativeTimeout : .zero)
            }
            self.nodes.addLookup(of: child, readAt: epoch)
            return self.entry(for: child)
        }
    }

    /// A lookup in a folder memory knows, and knows completely listed, answered on the FUSE thread
    /// from the store's session connection: no task and no hop to one of the store's readers,
    /// which cost more than the read (a missing name, as every create, mkdir and probe of a path
    /// asks, took 0.3–0.8 ms). Anything else, or a failed read, goes to `lookup`.
    public func lookupNow(parent: InodeNumber, name: [UInt8]) -> Entry? {
        guard let directory = nodes.record(parent), directory.item.kind == .directory,
            lister.isKnownComplete(directory.identifier)
        else { return nil }
        let filename = Filename(bytes: name)
        guard name.count <= Filename.maximumLength, filename.isValid else { return nil }
        let epoch = nodes.epoch
        let found: ItemRecord?
        do {
            found = try store.childNow(ofFolder: parent.rawValue, named: filename)
        } catch {
            return nil
        }
        guard let child = found else { return .negative(timeout: configuration.negativeTimeout) }
        nodes.addLookup(of: child, readAt: epoch)
        return entry(for: child)
    }

    public func forget(inode: InodeNumber, count: UInt64) async {
        if nodes.forget(inode, count: count) { passthrough.kernelForgot(inode.rawValue) }
    }

    /// A getattr answered on the FUSE thread: from the record memory keeps (a directory's, a
    /// file's opened or changed since its lookup), else from the store's session connection
    /// (DECISIONS 120). An inode the store does not know, or a failed read, goes to `getattr`.
    public func getattrNow(inode: InodeNumber) -> AttributesReply? {
        guard let record = nodes.record(inode) ?? (try? store.recordNow(inode: inode.rawValue)) else { return nil }
        return AttributesReply(attributes: attributes(of: record), timeout: configuration.attributeTimeout)
    }

    public func getattr(inode: InodeNumber, context: RequestContext) async throws -> AttributesReply {
        try await answering {
            let record = try await self.record(inode)
            return AttributesReply(
                attributes: self.attributes(of: record), timeout: self.configuration.attributeTimeout)
        }
    }

    public func readlink(inode: InodeNumber, context: RequestContext) async throws -> [UInt8] {
        try await answering {
            let record = try await self.record(inode)
            guard record.item.kind == .symlink, let target = record.item.symlinkTarget else {
                throw Errno.invalidArgument
            }
            return target
        }
    }

    /// `access(2)` checks the modes `stat` shows, as the kernel would for a local file: the
    /// mounting user is every item's owner, root may read and write anything and execute what has
    /// an execute bit (or is a folder). The kernel itself checks only `exec` (DECISIONS 193).
    public func access(inode: InodeNumber, mask: Int32, context: RequestContext) async throws {
        try await answering {
            let record = try await self.record(inode)
            if mask & W_OK != 0, self.configuration.isReadOnly { throw Errno.readOnlyFileSystem }
            guard self.permits(mask, on: record.item, to: context) else { throw Errno.permissionDenied }
        }
    }

    private func permits(_ mask: Int32, on item: Item, to context: RequestContext) -> Bool {
        let wanted = UInt16(mask & (R_OK | W_OK | X_OK))
        let modes = UInt16(item.permissions) & ~configuration.umask
        guard context.uid != 0 else {
            return wanted & UInt16(X_OK) == 0 || item.kind == .directory || modes & 0o111 != 0
        }
        let shift: UInt16 =
            if context.uid == configuration.uid { 6 } else if context.gid == configuration.gid { 3 } else { 0 }
        return (modes >> shift) & wanted == wanted
    }

    public func statfs(inode: InodeNumber) async throws -> FileSystemStatistics {
        try await answering {
            let directory = self.cache.directory.string
            let disk = try await BlockingIO.run {
                var buffer = statvfs()
                guard statvfs(directory, &buffer) == 0 else { throw Errno(rawValue: errno) }
                return buffer
            }
            let items = UInt64(try await self.store.itemCount())
            return FileSystemStatistics(
                blockSize: UInt64(disk.f_frsize), totalBlocks: UInt64(disk.f_blocks), freeBlocks: UInt64(disk.f_bfree),
                availableBlocks: UInt64(disk.f_bavail), totalFiles: items + UInt64(disk.f_ffree),
                freeFiles: UInt64(disk.f_ffree))
        }
    }

    // MARK: Files

    public func open(inode: InodeNumber, flags: Int32, context: RequestContext) async throws -> OpenReply {
        try await answering {
            let record = try await self.keptRecord(inode)
            guard record.item.kind == .file else { throw Errno.isDirectory }
            let readAhead = self.newReadAheadWindow()
            let olderOpen = self.hasOlderVersionOpen(record)
            let file: OpenFile
            if flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0 {
                // The kernel may write for a writer alone on its file, once its local content is
                // ready (DECISIONS 98, 102).
                let opening =
                    flags & O_ACCMODE != O_RDONLY
                    ? self.passthrough.openWriter(inode: record.inode)
                    : self.passthrough.open(inode: record.inode, candidate: nil)
                do {
                    file = try await self.openForWriting(
                        record, flags: flags, readAhead: readAhead, opening: opening, context: context)
                } catch {
                    self.passthrough.release(inode: record.inode, opening)
                    throw error
                }
            } else if let local = try await self.localFiles.openExisting(record.inode) {
                let candidate = PassthroughFiles.Candidate.local(local)
                let opening = self.passthrough.open(inode: record.inode, candidate: candidate)
                self.countPassthrough(opening)
                file = OpenFile(record: record, readAhead: readAhead, local: local, opening: opening)
            } else {
                file = try await self.openCached(record, readAhead: readAhead, olderOpen: olderOpen, context: context)
            }
            return self.answerOpen(of: file, flags: flags, olderOpen: olderOpen)
        }
    }

    /// A read-only open of a file with nothing local, answered on the FUSE thread: memory holds
    /// all it needs (the record a lookup kept, no local content, no cached bytes), and the cache
    /// file a first read needs is made in the background as before (`prepareContent`). A first
    /// read of a cold file starts with one (B3). Any other open has files to open and goes to
    /// `open`.
    public func openNow(inode: InodeNumber, flags: Int32, context: RequestContext) -> OpenReply? {
        guard flags & O_ACCMODE == O_RDONLY, flags & O_TRUNC == 0, let record = nodes.keepRecentLookup(inode),
            record.item.kind == .file, !localFiles.hasContent(record.inode), localBytes(of: record) == 0
        else { return nil }
        let olderOpen = hasOlderVersionOpen(record)
        let file = openFile(
            record, readAhead: newReadAheadWindow(), olderOpen: olderOpen, content: nil, candidate: nil,
            context: context)
        return answerOpen(of: file, flags: flags, olderOpen: olderOpen)
    }

    /// True while a handle of another content version of `record` is open.
    private func hasOlderVersionOpen(_ record: ItemRecord) -> Bool {
        openFiles.contains { $0.record.inode == record.inode && !$0.isOf(record) }
    }

    /// Registers `file` and makes the answer to its open.
    private func answerOpen(of file: OpenFile, flags: Int32, olderOpen: Bool) -> OpenReply {
        let handle = openFiles.insert(file)
        // The content of a version never changes, and local contents change only through the
        // kernel, so pages cached from an earlier open stay good.
        var reply = file.reply(handle, olderVersionOpen: olderOpen)
        // A handle that cannot write has nothing to save at close (`flush`): its close need not
        // wait for a request.
        reply.skipsFlush = !file.isWritable && flags & O_TRUNC == 0
        return reply
    }

    /// Opens a handle that reads the remote content `record` has now. Holding the cached content
    /// from the start keeps this version's bytes readable through it even if the remote changes
    /// the file meanwhile; when they are all local, the kernel may read them itself.
    private func openCached(
        _ record: ItemRecord, readAhead: ReadAheadWindow, olderOpen: Bool, context: RequestContext
    ) async throws -> OpenFile {
        let item = record.item
        var content: CachedContent?
        var candidate: PassthroughFiles.Candidate?
        if localBytes(of: record) > 0 {
            let opened = try await cache.content(
                for: item.identifier, contentVersion: item.version.content, size: item.size)
            if opened.isComplete {
                candidate = PassthroughFiles.Candidate(
                    file: opened.fileDescriptor, content: .cached(item.identifier, contentVersion: item.version.content)
                )
            }
            content = opened
        }
        return openFile(
            record, readAhead: readAhead, olderOpen: olderOpen, content: content, candidate: candidate,
            context: context)
    }

    /// A handle reading `record`'s remote content, with its `content` opened (nil: none cached
    /// yet, and it is prepared in the background) and the file the kernel may read itself.
    private func openFile(
        _ record: ItemRecord, readAhead: ReadAheadWindow, olderOpen: Bool, content: CachedContent?,
        candidate: PassthroughFiles.Candidate?, context: RequestContext
    ) -> OpenFile {
        // A large file read by requests would sit in memory twice, as the mount's pages and the
        // cache file's, each new memory (DECISIONS 155).
        let large = record.item.size >= configuration.directIOFileSize && passthrough.mapsDirectIOFiles
        let opening = passthrough.open(inode: record.inode, candidate: candidate, cachesPages: !olderOpen && !large)
        countPassthrough(opening)
        let bypassesPageCache: Bool
        if case .directIO = opening { bypassesPageCache = true } else { bypassesPageCache = olderOpen || large }
        let file = OpenFile(
            record: record, readAhead: readAhead, bypassesPageCache: bypassesPageCache, content: content,
            opening: opening)
        if content == nil, record.item.size > 0 { prepareContent(of: file, for: context.pid) }
        return file
    }

    public func read(
        inode: InodeNumber, handle: FileHandle, offset: UInt64, size: Int, context: RequestContext
    ) async throws -> ReadReply {
        try await answeringInterruptibly(about: {
            guard let file = self.openFiles[handle.rawValue] else { return nil }
            return "read of \(await self.store.logName(inode: file.record.inode))"
        }) {
            guard let file = self.openFiles[handle.rawValue] else { throw Errno.badFileDescriptor }
            if let local = file.local {
                let end = try await local.size()
                guard offset < end, size > 0 else { return .bytes([]) }
                return .fileRange(file: local, offset: offset, length: Int(min(end - offset, UInt64(size))))
            }
            let item = file.record.item
            guard offset < item.size, size > 0 else { return .bytes([]) }
            let range = offset..<min(offset + UInt64(size), item.size)
            let content = try await file.cachedContent(in: self.cache)
            if let reply = self.answerFromCache(range, of: file, content: content, pid: context.pid) { return reply }
            // Read-ahead is decided before any wait, so that on a miss it starts with the read's
            // own fetch.
            let ahead =
                self.fetcher.fetchesBlocks
                ? file.readAhead.withLock { $0.record(range, size: item.size) } : nil
            if let ahead, content.isPresent(ahead.range) { content.preload(ahead.range) }
            // The gate is asked once per read; a refused read fetches nothing ahead either.
            if let blocked = self.gate.blockedName(of: context.pid) {
                self.gate.recordRefusal(of: blocked)
                throw Errno.deadlock
            }
            self.statistics.update { $0.reads.waited += 1 }
            try await self.fetcher.ensurePresent(
                range, of: content, version: item.version, name: item.filename.description, prefetching: ahead)
            return .fileRange(file: CacheFileReference(content), offset: range.lowerBound, length: range.count)
        }
    }

    /// A read answered on the FUSE thread when its bytes are in the cache file already, as a
    /// streaming reader's are while read-ahead keeps ahead of it: no task, and no other thread
    /// woken to answer. A local file, a miss, or content not opened yet goes to `read`.
    public func readNow(
        inode: InodeNumber, handle: FileHandle, offset: UInt64, size: Int, context: RequestContext
    ) -> ReadReply? {
        guard let file = openFiles[handle.rawValue], file.local == nil, let content = file.openedContent else {
            return nil
        }
        let item = file.record.item
        guard offset < item.size, size > 0 else { return .bytes([]) }
        let range = offset..<min(offset + UInt64(size), item.size)
        return answerFromCache(range, of: file, content: content, pid: context.pid)
    }

    /// The answer to a read of `range` when all its bytes are in `content`, with the read-ahead
    /// it leads to under way; nil, with nothing recorded, when some are missing.
    private func answerFromCache(_ range: Range<UInt64>, of file: OpenFile, content: CachedContent, pid: Int32)
        -> ReadReply?
    {
        guard content.isPresent(range) else { return nil }
        let item = file.record.item
        if fetcher.fetchesBlocks, let ahead = file.readAhead.withLock({ $0.record(range, size: item.size) }) {
            if content.isPresent(ahead.range) {
                content.preload(ahead.range)
            } else if gate.blockedName(of: pid) == nil {
                fetcher.prefetch(
                    ahead.range, inRequestsOf: ahead.requestSize, of: content, version: item.version,
                    name: item.filename.description)
            }
        }
        let blockSize = cache.blockSize
        let blocks = Int((range.upperBound - 1) / blockSize - range.lowerBound / blockSize + 1)
        statistics.update {
            $0.reads.fromCache += 1
            $0.reads.blocksFromCache += blocks
        }
        return .fileRange(file: CacheFileReference(content), offset: range.lowerBound, length: range.count)
    }

    private func countPassthrough(_ opening: PassthroughFiles.Opening) {
        if opening.passesThrough { statistics.update { $0.reads.passthroughOpens += 1 } }
    }

    /// Opens the cached content of a handle with nothing local yet in the background, so that the
    /// store record and cache file it needs are (mostly) made while the kernel answers the open
    /// and sends the first read, not between that read and its fetch. A listed process (the gate)
    /// gets none: it may not download, and its opens should leave nothing behind.
    private func prepareContent(of file: OpenFile, for pid: Int32) {
        let (gate, cache, logger) = (self.gate, self.cache, self.logger)
        Task {
            guard gate.blockedName(of: pid) == nil else { return }
            do {
                _ = try await file.cachedContent(in: cache)
            } catch {
                // The first read opens it again and reports the failure.
                logger.debug("cannot open the cached content of \(file.record.identifier) early: \(error)")
            }
        }
    }

    public func flush(inode: InodeNumber, handle: FileHandle, context: RequestContext) async throws {
        try await answering {
            guard let file = self.openFiles[handle.rawValue] else { throw Errno.badFileDescriptor }
            try await self.saveWrites(of: file, inode: inode)
        }
    }

    /// A flush answered on the FUSE thread: there is nothing to save now (DECISIONS 138, 157).
    /// The handle's own writes are all saved; or the kernel writes a file whose open journalled
    /// its contents (a creation or truncation), and the release saves what it wrote, while until
    /// then a kill is covered by that entry (`settleInterruptedWriters`); or an in-place writer
    /// left the file as the store knows it. An in-place writer's change has no journal entry
    /// until a save, so its close saves, and `fpfs sync` after it waits for the upload. Anything
    /// else goes to `flush`.
    public func flushNow(inode: InodeNumber, handle: FileHandle) -> Bool {
        guard let file = openFiles[handle.rawValue] else { return false }
        guard file.writesThroughKernel else { return !file.writesUnseen && !file.hasUnsavedWrites }
        guard file.marksWriter else { return true }
        guard let written = passthrough.writtenStatus(of: inode.rawValue), written.modification == nil else {
            return false
        }
        return nodes.record(inode)?.item.size == written.size
    }

    public func release(inode: InodeNumber, handle: FileHandle, flags: Int32) async throws {
        guard let file = openFiles[handle.rawValue] else { return }
        closeHandle(file, handle: handle, inode: inode)
        try await answering {
            defer {
                if file.writesThroughKernel { self.passthrough.stopWriting(file.record.inode) }
                if file.isWritable { self.localFiles.endWriting(file.record.inode) }
            }
            try await self.saveWrites(of: file, inode: inode)
            // Only now, with what the kernel wrote journalled: a restart before this line
            // compares the local content with its mark (DECISIONS 102).
            if file.marksWriter { try await self.store.clearWriterMark(inode: file.record.inode) }
        }
        if file.isWritable { uploader.wake() }
    }

    /// A release answered on the FUSE thread: a handle that cannot write has nothing to save
    /// (DECISIONS 138). A writer's goes to `release`.
    public func releaseNow(inode: InodeNumber, handle: FileHandle) -> Bool {
        guard let file = openFiles[handle.rawValue], !file.isWritable else { return false }
        closeHandle(file, handle: handle, inode: inode)
        return true
    }

    /// Forgets the closed handle `handle` of `file`, what every release does before saving.
    private func closeHandle(_ file: OpenFile, handle: FileHandle, inode: InodeNumber) {
        openFiles.remove(handle.rawValue)
        passthrough.release(inode: file.record.inode, file.opening)
        cache.touch(file.record.identifier)
        // The last handle of a version the remote replaced may have put that version's pages in
        // the page cache: they go, from a task of their own (never from inside this request).
        if let current = nodes.record(inode), !file.isOf(current),
            !openFiles.contains(where: { $0.record.inode == current.inode && !$0.isOf(current) })
        {
            let kernel = uploader.kernel
            Task { await kernel.invalidateContent(of: inode) }
        }
    }

    // MARK: Directories

    public func opendir(inode: InodeNumber, flags: Int32, context: RequestContext) async throws -> OpenReply {
        try await answering {
            let directory = try await self.directory(inode)
            try await self.lister.ensureListed(directory.identifier)
            if self.kernelListings.mayKeep(inode, unchangedSince: self.childrenUnchanged(of: inode)) {
                return self.keepingListing(of: directory, subfolders: [])
            }
            // Items changed since that may be this folder's (a change through the mount, a folder
            // listed again): compare its entries, read alone, before reading its whole listing
            // (DECISIONS 112). A folder the kernel holds no listing of has nothing to compare.
            if self.kernelListings.holdsListing(of: inode) {
                let generation = self.store.itemGeneration
                let entries = try await self.store.childEntries(of: directory.identifier)
                let parent = try await self.parent(of: directory, inode: inode)
                let digest = KernelListings.digest(directory: directory, parent: parent, entries: entries)
                if self.kernelListings.mayKeep(inode, digest: digest, generation: generation) {
                    return self.keepingListing(of: directory, subfolders: entries.compactMap(\.folderIdentifier))
                }
            }
            return self.opened(directory, inode: inode, listing: try await self.listing(of: directory, inode: inode))
        }
    }

    /// An opendir answered on the FUSE thread: a folder memory holds, listed, whose listing the
    /// kernel cached and no child changed since; a warm walk opens every folder so (DECISIONS
    /// 137). A listed folder the kernel holds no listing of, as a cold walk finds the folders
    /// listed ahead of it, has its listing read here when it is short (DECISIONS 152). Anything
    /// else goes to `opendir`.
    public func opendirNow(inode: InodeNumber) -> OpenReply? {
        guard let directory = nodes.record(inode), directory.item.kind == .directory,
            lister.isKnownComplete(directory.identifier)
        else { return nil }
        if kernelListings.mayKeep(inode, unchangedSince: childrenUnchanged(of: inode)) {
            return keepingListing(of: directory, subfolders: [])
        }
        guard !kernelListings.holdsListing(of: inode), let listing = shortListingNow(of: directory, inode: inode)
        else { return nil }
        return opened(directory, inode: inode, listing: listing)
    }

    /// How many children a folder's listing may have to be read on the FUSE thread: an opendir
    /// there takes about 2.5 µs a child (2.2–3.6 ms for 1000), and every other request waits
    /// meanwhile, so at most about 0.7 ms.
    public static let childrenReadOnSessionThread = 256

    /// `listing(of:inode:)` read on the FUSE thread, or nil when the folder has more children than
    /// `childrenReadOnSessionThread` or the read fails (the task then reads it).
    private func shortListingNow(of directory: ItemRecord, inode: InodeNumber) -> DirectoryListing? {
        let generation = store.itemGeneration
        do {
            guard
                let children = try store.childrenNow(
                    of: directory.identifier, atMost: Self.childrenReadOnSessionThread),
                let parent = inode == .root
                    ? directory : try store.recordNow(identifier: directory.item.parentIdentifier)
            else { return nil }
            return DirectoryListing(of: directory, parent: parent, children: children, generation: generation)
        } catch {
            return nil
        }
    }

    /// The answer to an opendir of `directory` that read `listing` for its handle.
    private func opened(_ directory: ItemRecord, inode: InodeNumber, listing: DirectoryListing) -> OpenReply {
        listingAhead.opened(
            directory.identifier, in: directory.item.parentIdentifier,
            subfolders: listing.children.filter { $0.item.kind == .directory }.map(\.identifier))
        let handle = openDirectories.insert(OpenDirectory(directory: directory, listing: listing))
        return OpenReply(
            handle: FileHandle(handle), keepCache: kernelListings.mayKeep(inode, listing: listing), cacheDirectory: true
        )
    }

    /// For `KernelListings.mayKeep`: the store's item generation now, if no child of `inode`
    /// changed since the one given (other folders' listings may have been stored meanwhile, as in
    /// a cold walk).
    private func childrenUnchanged(of inode: InodeNumber) -> (UInt64) -> UInt64? {
        { self.store.itemGeneration(unchangedUnder: inode.rawValue, since: $0) }
    }

    /// The answer to an opendir of `directory` whose listing the kernel keeps: a handle with
    /// nothing read, since nothing is read now.
    private func keepingListing(of directory: ItemRecord, subfolders: [ItemIdentifier]) -> OpenReply {
        listingAhead.opened(directory.identifier, in: directory.item.parentIdentifier, subfolders: subfolders)
        let handle = openDirectories.insert(OpenDirectory(directory: directory, listing: nil))
        return OpenReply(handle: FileHandle(handle), keepCache: true, cacheDirectory: true)
    }

    /// Reads the listing of `directory` from the store.
    private func listing(of directory: ItemRecord, inode: InodeNumber) async throws -> DirectoryListing {
        let generation = store.itemGeneration
        let children = try await store.children(of: directory.identifier)
        let parent = try await self.parent(of: directory, inode: inode)
        return DirectoryListing(of: directory, parent: parent, children: children, generation: generation)
    }

    /// The record ".." of `directory` names (the root is its own parent).
    private func parent(of directory: ItemRecord, inode: InodeNumber) async throws -> ItemRecord {
        inode == .root ? directory : try await store.record(identifier: directory.item.parentIdentifier) ?? directory
    }

    public func readdir(
        inode: InodeNumber, handle: FileHandle, offset: UInt64, into buffer: inout DirectoryBuffer,
        context: RequestContext
    ) async throws {
        guard let open = openDirectories[handle.rawValue] else { throw Errno.badFileDescriptor }
        // Reading a listing changes nothing, so it may give up with its caller: no task of its own,
        // which would cost every readdir a hop even when the handle has its listing already.
        let listing = try await answeringInterruptibly(about: {
            "listing of \(await self.store.logName(inode: inode.rawValue))"
        }) {
            try await open.listing { try await self.listing(of: open.directory, inode: inode) }
        }
        fill(&buffer, from: listing, of: open.directory, inode: inode, offset: offset)
    }

    /// A readdir of a handle that holds its listing, as every handle opendir read one for does, is
    /// answered on the FUSE thread: it is work on memory alone (DECISIONS 152).
    public func readdirNow(inode: InodeNumber, handle: FileHandle, offset: UInt64, into buffer: inout DirectoryBuffer)
        -> Bool
    {
        guard let open = openDirectories[handle.rawValue], let listing = open.heldListing else { return false }
        fill(&buffer, from: listing, of: open.directory, inode: inode, offset: offset)
        return true
    }

    /// Fills `buffer` with the entries of `listing` of `directory` from `offset` on.
    private func fill(
        _ buffer: inout DirectoryBuffer, from listing: DirectoryListing, of directory: ItemRecord,
        inode: InodeNumber, offset: UInt64
    ) {
        kernelListings.answered(inode, offset: offset, from: listing)
        // Position 0 is ".", 1 is "..", 2 + i is child i; an entry's next offset is its position + 1.
        var position = Int(offset)
        while true {
            let name: [UInt8]
            let record: ItemRecord
            switch position {
            case 0: (name, record) = (Array(".".utf8), directory)
            case 1: (name, record) = (Array("..".utf8), listing.parent)
            case let index where index - 2 < listing.children.count:
                record = listing.children[index - 2]
                name = record.item.filename.bytes
            default: return
            }
            guard buffer.append(name: name, entry: entry(for: record), nextOffset: UInt64(position + 1)) else {
                return
            }
            // readdirplus hands the kernel a reference to each child (not to "." and "..").
            if buffer.isPlus && position >= 2 { nodes.addLookup(of: record) }
            position += 1
        }
    }

    public func releasedir(inode: InodeNumber, handle: FileHandle) async throws {
        openDirectories.remove(handle.rawValue)
    }

    /// Forgetting a handle waits for nothing: every releasedir is answered on the FUSE thread.
    public func releasedirNow(inode: InodeNumber, handle: FileHandle) -> Bool {
        openDirectories.remove(handle.rawValue)
        return true
    }

    // MARK: Extended attributes

    public func getxattr(inode: InodeNumber, name: String, context: RequestContext) async throws -> [UInt8] {
        try await answering {
            // No security labels or ACLs here. "Not supported" (rather than "no such attribute")
            // lets `ls -l` stop asking for the rest of the mount instead of asking twice per file.
            if name.hasPrefix("security.") || name.hasPrefix("system.") { throw ErrnoMapping.notSupported }
            let record = try await self.record(inode)
            if ExtendedAttribute.isUsers(name) {
                guard let value = try await self.store.userAttribute(inode: record.inode, name: name) else {
                    throw ErrnoMapping.noAttribute
                }
                return value
            }
            guard let value = try await self.extendedAttributes(of: record, inode: inode)[name] else {
                throw ErrnoMapping.noAttribute
            }
            return Array(value.utf8)
        }
    }

    public func listxattr(inode: InodeNumber, context: RequestContext) async throws -> [String] {
        try await answering {
            let record = try await self.record(inode)
            let users = try await self.store.userAttributeNames(inode: record.inode)
            return try await self.extendedAttributes(of: record, inode: inode).keys.sorted() + users
        }
    }

    private func extendedAttributes(of record: ItemRecord, inode: InodeNumber) async throws -> [String: String] {
        let item = record.item
        let local = localBytes(of: record)
        var attributes = [
            ExtendedAttribute.state: try await state(of: record, localBytes: local),
            ExtendedAttribute.localBytes: String(local),
            ExtendedAttribute.identifier: item.identifier.rawValue,
            ExtendedAttribute.pinned: try await store.isPinned(inode: record.inode) ? "1" : "0",
        ]
        if inode == .root, let control = configuration.controlSocketPath {
            attributes[ExtendedAttribute.control] = control
        }
        for (key, value) in item.userInfo { attributes[ExtendedAttribute.infoPrefix + key] = value }
        return attributes
    }

    /// `user.fpfs.state` (ARCHITECTURE §6): where the item's content is, or where its upload stands.
    private func state(of record: ItemRecord, localBytes local: UInt64) async throws -> String {
        if let upload = uploader.state(of: record.inode) { return upload.rawValue }
        if try await store.pendingChange(inode: record.inode) != nil { return "dirty" }
        if localFiles.isConflictCopy(record.inode) { return "conflict" }
        guard record.item.kind == .file else { return "local" }
        return local >= record.item.size ? "local" : (local == 0 ? "cloud" : "partial")
    }

    // MARK: Helpers

    /// Runs a request's body to its end and turns whatever it throws into the errno the caller
    /// should see. The kernel's INTERRUPT (the caller got a signal) cancels a request's task; the
    /// body runs in a task of its own and does not see that, because a change already made must
    /// not be answered with EINTR, and a lookup or getattr answered from the store never needs to
    /// be cut short (on a local disk these calls are never interrupted, and tools do not expect it).
    /// That task starts on the request's own thread (`Task.immediate`) rather than queued for
    /// another: a body answered from memory then finishes without a hop (DECISIONS 111).
    func answering<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await answeringInterruptibly { try await Task.immediate { try await body() }.value }
    }

    /// Runs a request's body, which gives up when the caller is interrupted: for reads that wait
    /// for the remote. `subject` (what is read, by path) goes into the log line of an EIO.
    func answeringInterruptibly<T>(about subject: () async -> String? = { nil }, _ body: () async throws -> T)
        async throws -> T
    {
        do {
            return try await body()
        } catch {
            throw await ErrnoMapping.errno(for: error, about: subject, logger: logger)
        }
    }

    /// The record of an inode the kernel holds (or, failing that, the store's).
    func record(_ inode: InodeNumber) async throws -> ItemRecord {
        if let record = nodes.record(inode) { return record }
        guard let record = try await store.record(inode: inode.rawValue) else { throw Errno.noSuchFileOrDirectory }
        return record
    }

    /// A new handle's read-ahead, sized by the configuration and spread over the pipeline.
    func newReadAheadWindow() -> ReadAheadWindow {
        ReadAheadWindow(
            blockSize: cache.blockSize, maximum: configuration.maximumReadAhead,
            maximumRequest: configuration.readAheadRequestSize, parallelism: configuration.pipelineDepth)
    }

    /// The record of an inode, which memory keeps from now on while the kernel holds the inode
    /// (see `NodeTable`): for opens and writes, which need it again soon.
    func keptRecord(_ inode: InodeNumber) async throws -> ItemRecord {
        if let record = nodes.keepRecentLookup(inode) { return record }
        while true {
            let epoch = nodes.epoch
            let record = try await record(inode)
            if nodes.keep(record, readAt: epoch) { return record }
        }
    }

    func directory(_ inode: InodeNumber) async throws -> ItemRecord {
        let record = try await record(inode)
        guard record.item.kind == .directory else { throw Errno.notDirectory }
        return record
    }

    func localBytes(of record: ItemRecord) -> UInt64 {
        let item = record.item
        guard item.kind == .file else { return 0 }
        if localFiles.hasContent(record.inode) { return item.size }
        return cache.localBytes(of: item.identifier, contentVersion: item.version.content)
    }

    func entry(for record: ItemRecord) -> Entry {
        Entry(
            attributes: attributes(of: record), attributeTimeout: configuration.attributeTimeout,
            entryTimeout: configuration.entryTimeout)
    }

    func attributes(of record: ItemRecord) -> FileAttributes {
        // A file's size and time as memory has them now: `record` may have been read before a
        // write or a release changed them there (DECISIONS 309, 310).
        var item = nodes.withUnsavedWrites(record).item
        // While the kernel writes the file itself, only the file knows its size (and its time,
        // once written since the daemon last saved it).
        if item.kind == .file, let written = passthrough.writtenStatus(of: record.inode) {
            item.size = written.size
            if let modified = written.modification { item.contentModificationDate = modified }
        }
        let type: FuseKit.FileType =
            switch item.kind {
            case .file: .regular
            case .directory: .directory
            case .symlink: .symlink
            }
        let size = item.kind == .symlink ? UInt64(item.symlinkTarget?.count ?? 0) : item.size
        let local = localBytes(of: record)
        // At least one block while bytes are on the remote only: GNU `tar -S` stores a file of
        // no blocks as one hole, without reading it (DECISIONS 191).
        let blocks = max((local + 511) / 512, item.kind == .file && local < size ? 1 : 0)
        let modified = FileTime(item.contentModificationDate)
        return FileAttributes(
            inode: InodeNumber(record.inode), type: type, permissions: item.permissions & ~configuration.umask,
            linkCount: item.kind == .directory ? 2 : 1, uid: configuration.uid, gid: configuration.gid, size: size,
            blocks: blocks, accessTime: modified,
            modificationTime: modified, changeTime: modified)
    }
}
