// The write side (ARCHITECTURE §4): every operation changes the store and the local folder, journals
// what the remote must hear in the same transaction, and answers at once; the Uploader replays
// the journal in the background. Nothing here waits for the remote, except where the bytes or the
// names a change needs are not local yet (opening a cloud file for writing, a directory never
// listed).

import BlockCache
import FileProviderKit
import FuseKit
import Logging
import MetadataStore
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

extension FileSystem {
    // MARK: Making items

    public func create(parent: InodeNumber, name: [UInt8], mode: UInt32, flags: Int32, context: RequestContext)
        async throws -> (Entry, OpenReply)
    {
        try await answering {
            // The content's file is made while the item is stored (DECISIONS 136).
            async let nameless = self.localFiles.makeNameless()
            let record: ItemRecord
            do {
                record = try await self.makeItem(in: parent, named: name, kind: .file, mode: mode, openToWrite: true)
            } catch {
                try? await nameless?.close()
                throw error
            }
            let local: LocalFile
            do { local = try await self.localFiles.open(record.inode, naming: nameless) } catch {
                self.localFiles.endWriting(record.inode)
                throw error
            }
            let readAhead = self.newReadAheadWindow()
            // A new inode has no other handle, and its creation journals its contents: the kernel
            // may write its local content itself (DECISIONS 98).
            let opening = self.passthrough.open(inode: record.inode, candidate: .local(local))
            if opening.passesThrough { self.startWritingThroughKernel(record.inode, local: local) }
            let file = OpenFile(record: record, readAhead: readAhead, local: local, isWritable: true, opening: opening)
            // The creation journalled the contents already: the first write needs no entry of its
            // own, and the size is saved when the handle is released (if anything was written).
            file.noteJournalled()
            let handle = self.openFiles.insert(file)
            return (self.entry(for: record), file.reply(handle, olderVersionOpen: false))
        }
    }

    /// A writer's handle passes through: its size and time come from its local content from now
    /// on (`PassthroughFiles.writtenStatus`).
    private func startWritingThroughKernel(_ inode: UInt64, local: LocalFile) {
        passthrough.startWriting(inode, local: FileDescriptor(rawValue: local.fileDescriptor))
        statistics.update { $0.reads.passthroughWriters += 1 }
    }

    public func mknod(parent: InodeNumber, name: [UInt8], mode: UInt32, device: UInt64, context: RequestContext)
        async throws -> Entry
    {
        try await answering {
            // Remotes hold files, folders and links; no devices, pipes or sockets.
            guard mode & UInt32(S_IFMT) == UInt32(S_IFREG) else { throw Errno.notPermitted }
            let record = try await self.makeItem(in: parent, named: name, kind: .file, mode: mode)
            _ = try await self.localFiles.open(record.inode)
            self.uploader.wake()
            return self.entry(for: record)
        }
    }

    public func mkdir(parent: InodeNumber, name: [UInt8], mode: UInt32, context: RequestContext) async throws -> Entry {
        try await answering {
            let record = try await self.makeItem(in: parent, named: name, kind: .directory, mode: mode)
            self.uploader.wake()
            return self.entry(for: record)
        }
    }

    public func symlink(target: [UInt8], parent: InodeNumber, name: [UInt8], context: RequestContext) async throws
        -> Entry
    {
        try await answering {
            try self.refuseIfReadOnly()
            let features = (self.provider as? any FeatureDescribing)?.features ?? .all
            guard features.contains(.symlinks) else {
                let path = await self.store.logName(of: name, inFolder: parent.rawValue)
                self.logger.notice(
                    "refused the symlink \(path): the remote cannot hold symlinks (a WebDAV remote can with --links)")
                throw Errno.notSupported
            }
            let record = try await self.makeItem(in: parent, named: name, kind: .symlink, mode: 0o777, target: target)
            self.uploader.wake()
            return self.entry(for: record)
        }
    }

    /// Hard links have no remote counterpart.
    public func link(inode: InodeNumber, newParent: InodeNumber, newName: [UInt8], context: RequestContext)
        async throws -> Entry
    {
        try await answering {
            try self.refuseIfReadOnly()
            throw Errno.notPermitted
        }
    }

    /// Stores a new item `name` in `parent` under a local identifier and journals its creation.
    /// With `openToWrite` (a file created open), memory keeps its record (see `NodeTable`), since
    /// its writes change it in memory and it may be unlinked while open; and it is open for
    /// writing (`LocalFileFolder.beginWriting`) from before the uploader can read its creation, so
    /// the creation is not sent empty ahead of the handle's writes.
    private func makeItem(
        in parent: InodeNumber, named name: [UInt8], kind: ItemKind, mode: UInt32, target: [UInt8]? = nil,
        openToWrite: Bool = false
    ) async throws -> ItemRecord {
        try refuseIfReadOnly()
        // A new item on a full cache disk is ENOSPC, before it takes the store's reserve: that is
        // for what frees the disk (deletions, and the ends of uploads, DECISIONS 202). Asked
        // meanwhile, so that the statvfs adds no wait of its own.
        async let room: Void = localFiles.ensureRoom(for: 0)
        let directory = try await directory(parent)
        let filename = try Self.validName(name)
        try await refuseNameTheRemoteCannotHold(filename, in: directory)
        // Writes are local first, also in a folder the remote cannot list now: the name is
        // checked against the local items, and a name the remote holds is met by the uploader,
        // which then takes a conflict name (DECISIONS 182).
        _ = try await lister.listedUnlessUnreachable(directory.identifier)
        try await room
        let now = Timestamp.now
        let item = Item(
            identifier: .makeLocal(), parentIdentifier: directory.identifier, filename: filename, kind: kind,
            size: UInt64(target?.count ?? 0), creationDate: now, contentModificationDate: now,
            permissions: UInt16(mode & 0o7777), version: ItemVersion(content: [], metadata: []),
            symlinkTarget: target)
        var fields: ItemFields = [.filename, .parentIdentifier, .contentModificationDate, .permissions]
        switch kind {
        case .file: fields.insert(.contents)
        case .symlink: fields.insert(.symlinkTarget)
        case .directory: break
        }
        let epoch = nodes.epoch
        let writer = Mutex<UInt64?>(nil)
        do {
            let inserted = try await store.insertLocalItem(item, fields: fields, inFolder: parent.rawValue) {
                [localFiles] inode in
                guard openToWrite else { return }
                writer.withLock { writer in
                    // A write retried after the disk filled up runs this again, perhaps with another inode.
                    guard writer != inode else { return }
                    if let earlier = writer { localFiles.endWriting(earlier) }
                    localFiles.beginWriting(inode)
                    writer = inode
                }
            }
            guard let record = inserted else { throw Errno.fileExists }
            nodes.addLookup(of: record)
            try await noteEntriesChanged(in: parent)
            if openToWrite, !nodes.keep(record, readAt: epoch) {
                return try await keptRecord(InodeNumber(record.inode))
            }
            return record
        } catch {
            if let inode = writer.withLock({ $0 }) { localFiles.endWriting(inode) }
            throw error
        }
    }

    // MARK: Contents

    /// Opens `record` for writing (or with O_TRUNC): its content becomes local first — empty when
    /// truncated, else the whole remote content, fetched under the process gate.
    func openForWriting(
        _ record: ItemRecord, flags: Int32, readAhead: ReadAheadWindow, opening: PassthroughFiles.Opening,
        context: RequestContext
    ) async throws -> OpenFile {
        try refuseIfReadOnly()
        let truncating = flags & O_TRUNC != 0
        let isWritable = flags & O_ACCMODE != O_RDONLY
        // Counted as a writer before the local content is opened, so that a remote change cannot
        // take that content away meanwhile (`LocalFileFolder.release`).
        if isWritable { localFiles.beginWriting(record.inode) }
        do {
            let local = try await makeLocal(record, keepingBytes: !truncating, context: context)
            var opening = opening
            if isWritable {
                opening = passthrough.settle(inode: record.inode, opening, candidate: .local(local))
            }
            let writesThroughKernel = isWritable && opening.passesThrough
            // Journalled here when the kernel writes: the daemon sees none of the writes. A local
            // content made for the truncation starts empty while the item still has the remote's
            // size: that too is a change, even if no write follows (`: > f`).
            if truncating, try await local.size() > 0 || record.item.size > 0 || writesThroughKernel {
                try await local.truncate(to: 0)
                try await saveChange(of: record.inode, fields: [.contents, .contentModificationDate]) {
                    $0.size = 0
                    $0.contentModificationDate = .now
                }
            }
            let marksWriter = writesThroughKernel && !truncating
            if marksWriter { try await markWriter(of: record.inode, local: local) }
            if writesThroughKernel { startWritingThroughKernel(record.inode, local: local) }
            return OpenFile(
                record: record, readAhead: readAhead, local: local, isWritable: isWritable,
                bypassesPageCache: opening.backing != nil, opening: opening, marksWriter: marksWriter)
        } catch {
            if isWritable { localFiles.endWriting(record.inode) }
            throw error
        }
    }

    /// A writer without O_TRUNC that the kernel writes for has no journal entry until a save
    /// sees its writes, so a daemon ended before that would forget them. Its local content gets a
    /// modification time a second in the past, which any write moves off, and the store keeps it
    /// as the writer's mark until the release; a restart journals the contents of a local content
    /// whose time is no longer its mark (`settleInterruptedWriters`, DECISIONS 102).
    private func markWriter(of inode: UInt64, local: LocalFile) async throws {
        let now = Timestamp.now
        let mark = Timestamp(seconds: now.seconds - 1, nanoseconds: now.nanoseconds)
        try await local.setModification(mark)
        try await store.markWriter(inode: inode, modification: mark)
    }

    /// Journals the contents of each local content that a writer the kernel wrote for had open
    /// when the daemon last ended, if its time moved off the writer's mark or, for contents
    /// journalled already, if the file is newer than the store; forgets the marks.
    static func settleInterruptedWriters(store: MetadataStore, localFiles: LocalFileFolder, logger: Logger)
        async throws
    {
        let marks = try await store.writerMarks()
        let journalled = try await store.journalledLocalContents()
        guard !marks.isEmpty || !journalled.isEmpty else { return }
        var written: [UInt64: (size: UInt64, modification: Timestamp)] = [:]
        for (inode, mark) in marks {
            guard let status = try await localFiles.sizeAndModification(of: inode), status.modification != mark
            else { continue }
            written[inode] = status
        }
        // A new or truncated file's close saves nothing while the kernel writes it (DECISIONS
        // 157): the file is newer than the store after a kill between its close and release.
        for (inode, stored) in journalled where written[inode] == nil {
            guard let status = try await localFiles.sizeAndModification(of: inode),
                status.size != stored.size || status.modification > stored.modification
            else { continue }
            written[inode] = status
        }
        if !written.isEmpty {
            logger.notice("\(written.count) file(s) written before the daemon last ended are journalled for upload")
        }
        try await store.settleInterruptedWriters(written)
    }

    /// Notes what the sends the daemon's end interrupted sent, from the snapshots they left under
    /// `root`: the remote may hold those bytes, and a retry knows them for the file's own even
    /// when the file changes here again first (DECISIONS 307). A file's creation among
    /// `creations` that left no snapshot was sent empty (DECISIONS 319).
    static func noteInterruptedSends(
        under root: FilePath, creations: Set<UInt64>, store: MetadataStore, logger: Logger
    ) async {
        let leftovers = LocalFileFolder.leftoverSnapshots(under: root)
        var sends: [(inode: UInt64, sent: @Sendable () async throws -> SentContent)] = leftovers.map { leftover in
            (leftover.inode, { try await ContentDigest.of(leftover.path) })
        }
        for inode in creations.subtracting(leftovers.map(\.inode)) { sends.append((inode, { ContentDigest.empty })) }
        for (inode, sent) in sends {
            do {
                try await store.noteSentContent(sent(), inode: inode)
            } catch {
                logger.warning("cannot note what an interrupted upload sent of inode \(inode): \(error)")
            }
        }
    }

    /// The local content of a file, made from the remote content (all of it fetched first) unless
    /// `keepingBytes` is false, when it starts empty.
    ///
    /// While the kernel reads this version's cache file for passthrough handles, that file itself
    /// becomes the local content, bytes kept whatever `keepingBytes` says (the caller truncates),
    /// and the cache forgets it: those handles then read what is written here, and a writer's
    /// memory map, which the kernel puts on that same file, writes the local content.
    private func makeLocal(_ record: ItemRecord, keepingBytes: Bool, context: RequestContext) async throws
        -> LocalFile
    {
        let inode = record.inode
        if let local = try await localFiles.openExisting(inode) { return local }
        let item = record.item
        if passthrough.backing(of: inode) == .cached(item.identifier, contentVersion: item.version.content),
            try await adoptBackingFile(of: record)
        {
            let local = try await localFiles.open(inode)
            try await store.markLocalContent(inode: inode)
            return local
        }
        if keepingBytes && item.size > 0 { try await copyRemoteContent(of: record, context: context) }
        let local = try await localFiles.open(inode)
        try await store.markLocalContent(inode: inode)
        return local
    }

    /// Makes the remote content of `record` (all of it fetched first) its local content. A move
    /// recorded after `record` was read gave the item another identifier, which the remote knows
    /// and the old one no longer: the bytes are fetched under the item's identifier now
    /// (DECISIONS 303).
    private func copyRemoteContent(of record: ItemRecord, context: RequestContext) async throws {
        var item = record.item
        while true {
            do {
                let content = try await cache.content(
                    for: item.identifier, contentVersion: item.version.content, size: item.size)
                if !content.isComplete {
                    if let blocked = gate.blockedName(of: context.pid) {
                        gate.recordRefusal(of: blocked)
                        throw Errno.deadlock
                    }
                    try await fetcher.ensurePresent(
                        0..<item.size, of: content, version: item.version, name: item.filename.description)
                }
                return try await localFiles.adopt(record.inode, copying: content.fileDescriptor, size: item.size)
            } catch ProviderError.noSuchItem(let detail) {
                let now = try await self.record(InodeNumber(record.inode)).item
                guard now.identifier != item.identifier else { throw ProviderError.noSuchItem(detail) }
                item = now
            }
        }
    }

    /// Links the complete cache file of `record`'s version as its local content and drops it from
    /// the cache; false (nothing changed) when the file cannot be linked.
    private func adoptBackingFile(of record: ItemRecord) async throws -> Bool {
        let item = record.item
        let content = try await cache.content(
            for: item.identifier, contentVersion: item.version.content, size: item.size)
        guard content.isComplete else { return false }
        do {
            try await localFiles.adopt(record.inode, linking: content.fileDescriptor)
        } catch {
            let path = await store.logName(inode: record.inode)
            logger.notice("cannot link the cache file of \(path) as its local content (\(error)); copying it")
            return false
        }
        await cache.discard(item.identifier)
        return true
    }

    public func write(
        inode: InodeNumber, handle: FileHandle, offset: UInt64, bytes: [UInt8], context: RequestContext
    ) async throws -> Int {
        try await answering {
            guard let file = self.openFiles[handle.rawValue], file.isWritable, let local = file.local else {
                throw Errno.badFileDescriptor
            }
            try await self.localFiles.ensureRoom(for: UInt64(bytes.count))
            try await local.write(bytes, at: offset)
            let end = offset + UInt64(bytes.count)
            let first = file.noteWrite()
            let record = try await self.changeInMemory(inode) { item in
                item.size = max(item.size, end)
                item.contentModificationDate = .now
            }
            // Journalled at the first write already, so a crash before close still leaves the
            // item marked as changed; the size is saved again when the handle is flushed.
            if first {
                try await self.store.saveLocalChange(
                    record.item, inode: record.inode, fields: [.contents, .contentModificationDate])
            }
            return bytes.count
        }
    }

    /// Saves what a handle's writes changed (size, time) in the store, and lets the uploader know.
    func saveWrites(of file: OpenFile, inode: InodeNumber) async throws {
        if file.writesThroughKernel {
            // The journal entry made at open (a creation or a truncation) holds the contents until
            // the last writer is gone, so only a size or time the kernel changed since the last
            // save needs saving.
            guard let written = passthrough.writtenStatus(of: inode.rawValue, seen: true) else { return }
            var changed = written.modification != nil
            // Saved as changed here: the kernel may have forgotten the inode before its release
            // came (it sends the release after the close), and memory then keeps no record of it,
            // so the store's, read again, had the size from before the writes (DECISIONS 310).
            let record = try await changeInMemory(inode) { item in
                changed = changed || item.size != written.size
                item.size = written.size
                if let modified = written.modification { item.contentModificationDate = modified }
            }
            guard changed else { return }
            try await saveWritten(record)
        } else {
            guard file.takeUnsavedWrites() || file.writesUnseen else { return }
            try await saveWritten(record(inode))
        }
    }

    private func saveWritten(_ record: ItemRecord) async throws {
        try await store.saveLocalChange(
            record.item, inode: record.inode, fields: [.contents, .contentModificationDate])
    }

    public func fsync(inode: InodeNumber, handle: FileHandle, dataOnly: Bool, context: RequestContext) async throws {
        try await answering {
            guard let file = self.openFiles[handle.rawValue] else { throw Errno.badFileDescriptor }
            try await file.local?.synchronize()
            try await self.saveWrites(of: file, inode: inode)
        }
    }

    public func fallocate(
        inode: InodeNumber, handle: FileHandle, mode: Int32, offset: UInt64, length: UInt64, context: RequestContext
    ) async throws {
        try await answering {
            guard mode == 0 else { throw Errno.notSupported }
            guard let file = self.openFiles[handle.rawValue], file.isWritable, let local = file.local else {
                throw Errno.badFileDescriptor
            }
            try await self.localFiles.ensureRoom(for: length)
            try await local.allocate(offset..<offset + length)
            let size = try await local.size()
            try await self.saveChange(of: inode.rawValue, fields: [.contents]) { $0.size = size }
        }
    }

    // MARK: Attributes

    public func setattr(inode: InodeNumber, changes: AttributeChanges, handle: FileHandle?, context: RequestContext)
        async throws -> AttributesReply
    {
        try await answering {
            try self.refuseIfReadOnly()
            var record = try await self.record(inode)
            var fields: ItemFields = []
            // A writer until the new size is saved (see openForWriting).
            if changes.size != nil { self.localFiles.beginWriting(record.inode) }
            defer { if changes.size != nil { self.localFiles.endWriting(record.inode) } }
            if let size = changes.size {
                guard record.item.kind == .file else { throw Errno.isDirectory }
                let local =
                    if let handle, let open = self.openFiles[handle.rawValue]?.local { open } else {
                        try await self.makeLocal(record, keepingBytes: size > 0, context: context)
                    }
                try await local.truncate(to: size)
                fields.formUnion([.contents, .contentModificationDate])
            }
            let permissions = changes.permissions.map { $0 & 0o7777 }
            if permissions != nil { fields.insert(.permissions) }
            let modified: Timestamp? =
                switch changes.modificationTime {
                case nil: nil
                case .now: .now
                case .time(let time): Timestamp(seconds: time.seconds, nanoseconds: time.nanoseconds)
                }
            if modified != nil { fields.insert(.contentModificationDate) }
            // Owners: remotes have none; every item shows the mounting user (DECISIONS). Access
            // times are not kept.
            if !fields.isEmpty {
                // What the kernel wrote itself so far is older than this change's time; its size
                // is saved with it, or a release saving the size after it could come first
                // (DECISIONS 310).
                let written = self.passthrough.writtenStatus(of: record.inode, seen: true)
                record = try await self.saveChange(of: record.inode, fields: fields) { item in
                    if let written { item.size = written.size }
                    if let size = changes.size {
                        item.size = size
                        item.contentModificationDate = .now
                    }
                    if let permissions { item.permissions = permissions }
                    if let modified { item.contentModificationDate = modified }
                }
            }
            return AttributesReply(
                attributes: self.attributes(of: record), timeout: self.configuration.attributeTimeout)
        }
    }

    /// Applies `change` to the current item at `inode`, saves it with its journal entry and wakes
    /// the uploader.
    @discardableResult
    private func saveChange(
        of inode: UInt64, fields: ItemFields, inFolder folder: InodeNumber? = nil, _ change: (inout Item) -> Void
    ) async throws -> ItemRecord {
        let record = try await changeInMemory(InodeNumber(inode), change)
        let saved = try await store.saveLocalChange(
            record.item, inode: inode, fields: fields, localContent: localFiles.hasContent(inode),
            inFolder: folder?.rawValue)
        // The folder as the store names it now, where `change` may have used a name a move
        // confirmed meanwhile replaced (DECISIONS 299).
        if let saved, saved.item.parentIdentifier != record.item.parentIdentifier {
            _ = nodes.update(InodeNumber(inode)) { $0.parentIdentifier = saved.item.parentIdentifier }
        }
        uploader.wake()
        return saved ?? record
    }

    /// Applies `change` to the item at `inode` where getattr reads it: in the node table, atomically,
    /// while the kernel holds the inode; otherwise to a copy of the store's record, which the
    /// caller saves.
    @discardableResult
    private func changeInMemory(_ inode: InodeNumber, _ change: (inout Item) -> Void) async throws -> ItemRecord {
        if let updated = nodes.update(inode, change) { return updated }
        var record = try await keptRecord(inode)
        if let updated = nodes.update(inode, change) { return updated }
        change(&record.item)
        return record
    }

    // MARK: Names

    public func unlink(parent: InodeNumber, name: [UInt8], context: RequestContext) async throws {
        try await answering {
            let child = try await self.existingChild(of: parent, named: name)
            guard child.item.kind != .directory else { throw Errno.isDirectory }
            try await self.remove(child, toTrash: self.configuration.trashesDeletions)
            try await self.noteEntriesChanged(in: parent)
        }
    }

    public func rmdir(parent: InodeNumber, name: [UInt8], context: RequestContext) async throws {
        try await answering {
            let child = try await self.existingChild(of: parent, named: name)
            guard child.item.kind == .directory else { throw Errno.notDirectory }
            try await self.remove(child, toTrash: self.configuration.trashesDeletions)
            try await self.noteEntriesChanged(in: parent)
        }
    }

    public func rename(
        parent: InodeNumber, name: [UInt8], newParent: InodeNumber, newName: [UInt8], flags: UInt32,
        context: RequestContext
    ) async throws {
        try await answering {
            // RENAME_EXCHANGE has no remote counterpart; RENAME_NOREPLACE is honoured below.
            guard flags & ~Self.renameNoReplace == 0 else { throw Errno.invalidArgument }
            let source = try await self.existingChild(of: parent, named: name)
            let target = try await self.directory(newParent)
            let filename = try Self.validName(newName)
            if filename != source.item.filename || target.identifier != source.item.parentIdentifier {
                try await self.refuseNameTheRemoteCannotHold(filename, in: target)
            }
            // Not unless unreachable: a rename replaces what holds the name, which only a listing
            // tells (a remote item overwritten, not a conflict name).
            try await self.lister.ensureListed(target.identifier)
            if let existing = try await self.store.child(ofFolder: newParent.rawValue, named: filename) {
                guard existing.inode != source.inode else { return }
                guard flags & Self.renameNoReplace == 0 else { throw Errno.fileExists }
                switch (source.item.kind == .directory, existing.item.kind == .directory) {
                case (true, false): throw Errno.notDirectory
                case (false, true): throw Errno.isDirectory
                // Replaced, not deleted by the user: an editor's save must not fill the trash.
                default: try await self.remove(existing, toTrash: false)
                }
            }
            // A rename names the item's whole place, folder and name together: sent as one field,
            // a move that keeps the name took the remote's racing rename along with it, a place
            // nobody chose (DECISIONS 288).
            let moved = source.item.filename != filename || source.item.parentIdentifier != target.identifier
            let fields: ItemFields = moved ? [.filename, .parentIdentifier] : []
            try await self.saveChange(of: source.inode, fields: fields, inFolder: newParent) { item in
                item.filename = filename
                item.parentIdentifier = target.identifier
            }
            try await self.noteEntriesChanged(in: parent)
            if newParent != parent { try await self.noteEntriesChanged(in: newParent) }
        }
    }

    /// Entries of the folder `folder` were made, removed or renamed here: its modification time,
    /// and so its change time, becomes now, as on a local disk (make, rsync and backup tools
    /// compare them; DECISIONS 192). In memory, where getattr reads it, and in the store.
    private func noteEntriesChanged(in folder: InodeNumber) async throws {
        let now = Timestamp.now
        _ = nodes.update(folder) { item in
            if item.contentModificationDate < now { item.contentModificationDate = now }
        }
        try await store.noteEntriesChanged(inFolder: folder.rawValue, at: now)
    }

    /// The child `name` of the directory `parent`, listed first if need be.
    private func existingChild(of parent: InodeNumber, named name: [UInt8]) async throws -> ItemRecord {
        try refuseIfReadOnly()
        let directory = try await directory(parent)
        let filename = try Self.validName(name)
        // In a folder never listed, with the remote away, the items made here (DECISIONS 182).
        _ = try await lister.listedUnlessUnreachable(directory.identifier)
        guard let child = try await store.child(ofFolder: parent.rawValue, named: filename) else {
            throw Errno.noSuchFileOrDirectory
        }
        return child
    }

    /// Removes an item (an empty directory only) and journals its deletion, or with `toTrash` its
    /// move to the remote's trash.
    private func remove(_ record: ItemRecord, toTrash: Bool) async throws {
        if record.item.kind == .directory {
            try await lister.ensureListed(record.identifier)
            guard try await store.children(of: record.identifier).isEmpty else { throw Errno.directoryNotEmpty }
        }
        if try await store.deleteLocally(inode: record.inode, toTrash: toTrash), record.item.kind == .file {
            await localFiles.keepDeleted(record.inode, as: record.identifier)
        } else {
            await localFiles.remove(record.inode)
        }
        uploader.wake()
    }

    // MARK: Extended attributes

    /// Users' own attributes (`user.*`) are kept in the store, on this machine only; other
    /// namespaces are not supported.
    public func setxattr(inode: InodeNumber, name: String, value: [UInt8], flags: Int32, context: RequestContext)
        async throws
    {
        try await answering {
            // Pinning is local, so it works on a read-only mount too.
            if name == ExtendedAttribute.pinned { return try await self.setPinned(inode, value: value) }
            try self.refuseIfReadOnly()
            // The engine's own are derived, not stored: setting one is ignored, so that copying
            // between two mounts with `rsync -aX` works.
            if name.hasPrefix(ExtendedAttribute.enginePrefix) { return }
            guard ExtendedAttribute.isUsers(name) else { throw Errno.notSupported }
            guard value.count <= ExtendedAttribute.maximumValueSize else { throw Errno.argListTooLong }
            let record = try await self.record(inode)
            if let describing = self.provider as? any FeatureDescribing {
                var attributes = try await self.store.userAttributes(inode: record.inode)
                attributes[name] = value
                if let reason = describing.reasonItCannotHold(attributes: attributes) {
                    let path = await self.store.logName(inode: record.inode)
                    self.logger.notice("refused the attribute '\(name)' of \(path): \(reason)")
                    throw Errno.argListTooLong
                }
            }
            let set = try await self.store.setUserAttribute(
                inode: record.inode, name: name, value: value, mustExist: flags & Self.xattrReplace != 0,
                mustBeNew: flags & Self.xattrCreate != 0)
            if !set { throw flags & Self.xattrCreate != 0 ? Errno.fileExists : ErrnoMapping.noAttribute }
        }
    }

    public func removexattr(inode: InodeNumber, name: String, context: RequestContext) async throws {
        try await answering {
            try self.refuseIfReadOnly()
            // Likewise removing one: `rsync -aX` removes what its source lacks.
            if name.hasPrefix(ExtendedAttribute.enginePrefix) { return }
            guard ExtendedAttribute.isUsers(name) else { throw Errno.notSupported }
            let record = try await self.record(inode)
            guard try await self.store.removeUserAttribute(inode: record.inode, name: name) else {
                throw ErrnoMapping.noAttribute
            }
        }
    }

    // MARK: The uploader

    /// Lets the engine correct the kernel's caches after changes it did not ask for (conflicts,
    /// remote changes).
    public func attach(_ notifier: FuseNotifier) { uploader.kernel.attach(notifier) }

    /// Lets the kernel read complete cached contents itself (FUSE passthrough) from now on.
    public func attach(_ backingFiles: any BackingFileRegistry) { passthrough.attach(backingFiles) }

    /// The local changes not yet on the remote, with the first `listing` of them.
    public func uploadQueue(listing limit: Int = 10) async throws -> UploadQueue {
        let totals = try await store.pendingTotals()
        var first = try await store.pendingSummary(limit: limit)
        let waits = uploader.waits
        for index in first.indices {
            guard let sequence = first[index].sequence, let blocker = waits[sequence] else { continue }
            switch blocker {
            case .entry(let entry, let failed):
                first[index].waitsFor = await uploader.describe(entry)
                first[index].isStuck = failed
            case .creation(let folder):
                let record = try await store.record(identifier: folder)
                let name = record == nil ? "its folder" : await store.logName(of: folder)
                first[index].waitsFor = "the creation of \(name)"
                first[index].isStuck = record.map { uploader.state(of: $0.inode) == .error } ?? false
            }
        }
        return UploadQueue(
            pending: totals.pending, failing: totals.failing, refused: uploader.refusedCount, bytes: totals.bytes,
            first: first)
    }

    /// Retries every waiting journal entry now.
    public func retryUploadsNow() { uploader.retryNow() }

    // MARK: Helpers

    /// renameat2's RENAME_NOREPLACE (linux/fs.h), which Glibc's module does not export.
    private static let renameNoReplace: UInt32 = 1 << 0
    /// setxattr's XATTR_CREATE and XATTR_REPLACE (linux/xattr.h), likewise.
    private static let xattrCreate: Int32 = 1
    private static let xattrReplace: Int32 = 2

    func refuseIfReadOnly() throws {
        if configuration.isReadOnly { throw Errno.readOnlyFileSystem }
    }

    /// Refuses, with EILSEQ and a log line saying why, a name the remote could not hold: accepted
    /// here, it could never be uploaded.
    private func refuseNameTheRemoteCannotHold(_ name: Filename, in parent: ItemRecord) async throws {
        guard let describing = provider as? any FeatureDescribing,
            let reason = describing.reasonItCannotHold(name: name, in: parent.identifier)
        else { return }
        let path = await store.logName(of: name.bytes, inFolder: parent.inode)
        logger.notice("refused the name '\(path)': \(reason)")
        throw Errno.illegalByteSequence
    }

    private static func validName(_ name: [UInt8]) throws -> Filename {
        guard name.count <= Filename.maximumLength else { throw Errno.fileNameTooLong }
        let filename = Filename(bytes: name)
        guard filename.isValid else { throw Errno.invalidArgument }
        return filename
    }
}
