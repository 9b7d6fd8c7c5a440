import CFuse
import Foundation

// The C callbacks libfuse calls, one top-level function per operation (closures that capture
// cannot be C function pointers, and capture-free closures crash the Swift 6 compiler here).
//
// Each one runs on the session thread and must return quickly: it copies every argument it
// needs — names, fuse_file_info fields, write buffers all die with the callback — counts the
// request as in flight, and starts a task that calls the filesystem and replies.

/// The operation table for `fuse_session_new`. There is no destroy callback: `FuseSession.run`
/// calls `shutdown()` itself once the session has ended, whether or not INIT ever arrived.
func makeLowLevelOperations() -> fuse_lowlevel_ops {
    var operations = fuse_lowlevel_ops()
    operations.`init` = fuseInit
    operations.lookup = fuseLookup
    operations.forget = fuseForget
    operations.forget_multi = fuseForgetMulti
    operations.getattr = fuseGetattr
    operations.setattr = fuseSetattr
    operations.readlink = fuseReadlink
    operations.mknod = fuseMknod
    operations.mkdir = fuseMkdir
    operations.unlink = fuseUnlink
    operations.rmdir = fuseRmdir
    operations.symlink = fuseSymlink
    operations.rename = fuseRename
    operations.link = fuseLink
    operations.open = fuseOpen
    operations.read = fuseRead
    operations.write = fuseWrite
    operations.flush = fuseFlush
    operations.release = fuseRelease
    operations.fsync = fuseFsync
    operations.opendir = fuseOpendir
    operations.readdir = fuseReaddir
    operations.readdirplus = fuseReaddirplus
    operations.releasedir = fuseReleasedir
    operations.fsyncdir = fuseFsyncdir
    operations.statfs = fuseStatfs
    operations.setxattr = fuseSetxattr
    operations.getxattr = fuseGetxattr
    operations.listxattr = fuseListxattr
    operations.removexattr = fuseRemovexattr
    operations.access = fuseAccess
    operations.create = fuseCreate
    operations.fallocate = fuseFallocate
    return operations
}

// MARK: - Plumbing

/// Answers `raw` from a new task: `operation` runs against the filesystem, `reply` sends what it
/// returned; a thrown error is answered by `Reply.fail`. The task is cancelled if the kernel
/// interrupts the request, before or while it runs.
private func respond<Value: Sendable>(
    _ raw: OpaquePointer?,
    _ operation: @escaping @Sendable (any FileSystemOperations, RequestContext) async throws -> Value,
    reply: @escaping @Sendable (consuming Reply, Value) -> Void
) {
    let request = FuseRequest(raw)
    let context = request.context
    let session = request.session
    session.inFlight.enter()
    // Before the task exists, since the task's reply frees the request. Interrupts are handled
    // on this thread, so none can slip in before the task is registered; one that came with the
    // request (libfuse then calls fuseInterrupt at once, finding no task) the task sees itself.
    fuse_req_interrupt_func(raw, fuseInterrupt, Unmanaged.passUnretained(session).toOpaque())
    // Registered under the lock the task takes to unregister, so it cannot finish first.
    session.tasks.withLock { tasks in
        tasks[request.key] = Task {
            let outcome: Result<Value, any Error>
            do {
                // An interrupt that came before the task existed cancels it now, like a later one:
                // the filesystem decides what a cancelled request does (a change it has begun
                // finishes; a wait for the remote gives up).
                if fuse_req_interrupted(request.raw) != 0 { withUnsafeCurrentTask { $0?.cancel() } }
                outcome = .success(try await operation(session.operations, context))
            } catch {
                outcome = .failure(error)
            }
            session.tasks.withLock { _ = $0.removeValue(forKey: request.key) }
            let answer = Reply(request)
            switch outcome {
            case .success(let value): reply(answer, value)
            case .failure(let error): answer.fail(error)
            }
        }
    }
}

/// The kernel's INTERRUPT for a request: cancel its task, which then answers (EINTR when it
/// gives up with a CancellationError). Called on the session thread.
private func fuseInterrupt(_ raw: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?) {
    let request = FuseRequest(raw)
    // Cancelled outside the lock: cancellation handlers run right here.
    SessionContext.from(userdata).tasks.withLock { $0[request.key] }?.cancel()
}

/// Answers `raw` at once, on the session thread, with what the filesystem's synchronous method
/// gave (the `…Now` methods of `FileSystemOperations`); false when it gave nothing and a task must
/// answer.
private func answered<Value>(_ raw: OpaquePointer?, _ value: Value?, reply: (consuming Reply, Value) -> Void) -> Bool {
    guard let value else { return false }
    let request = FuseRequest(raw)
    request.session.inFlight.enter()
    reply(Reply(request), value)
    return true
}

/// `respond` for operations that answer with success alone.
private func respondEmpty(
    _ raw: OpaquePointer?,
    _ operation: @escaping @Sendable (any FileSystemOperations, RequestContext) async throws -> Void
) {
    respond(raw, operation) { (answer: consuming Reply, _: Void) in answer.ok() }
}

/// `respond` for operations that answer with an entry.
private func respondEntry(
    _ raw: OpaquePointer?,
    _ operation: @escaping @Sendable (any FileSystemOperations, RequestContext) async throws -> Entry
) {
    respond(raw, operation) { (answer: consuming Reply, entry: Entry) in answer.entry(entry) }
}

/// A copy of a NUL-terminated name that outlives the callback.
private func copyName(_ name: UnsafePointer<CChar>?) -> [UInt8] {
    guard let name else { return [] }
    return Array(UnsafeRawBufferPointer(start: name, count: strlen(name)))
}

private func inode(_ raw: fuse_ino_t) -> InodeNumber { InodeNumber(raw) }

private func handle(_ info: UnsafeMutablePointer<fuse_file_info>?) -> FileHandle {
    FileHandle(info?.pointee.fh ?? 0)
}

// MARK: - Session

private func fuseInit(_ userdata: UnsafeMutableRawPointer?, _ connection: UnsafeMutablePointer<fuse_conn_info>?) {
    guard let connection else { return }
    let context = SessionContext.from(userdata)
    context.operations.configure(&connection.pointee, context: context)
}

extension FileSystemOperations {
    /// Offers the filesystem what libfuse and the kernel can do, then applies what it chose.
    fileprivate func configure(_ connection: inout fuse_conn_info, context: SessionContext) {
        func isCapable(_ capability: Int32) -> Bool { connection.capable & UInt32(capability) != 0 }
        func want(_ capability: Int32, _ wanted: Bool) {
            if wanted && isCapable(capability) {
                connection.want |= UInt32(capability)
            } else {
                connection.want &= ~UInt32(capability)
            }
        }

        var settings = ConnectionSettings()
        // libfuse has already capped max_write to its buffer and max_readahead to the kernel's.
        settings.maxWrite = min(settings.maxWrite, connection.max_write)
        settings.maxReadahead = min(settings.maxReadahead, connection.max_readahead)
        settings.readdirplus = settings.readdirplus && isCapable(FUSE_CAP_READDIRPLUS)
        settings.cacheSymlinks = settings.cacheSymlinks && isCapable(FUSE_CAP_CACHE_SYMLINKS)
        initialize(settings: &settings)

        connection.max_write = min(settings.maxWrite, connection.max_write)
        // libfuse insists that this equals the max_read mount option.
        connection.max_read = UInt32(FuseSession.maximumRead)
        // The kernel offers only its default read-ahead (128 KiB); more is set on the mount's
        // backing device after INIT (FuseSession.raiseReadahead).
        if settings.maxReadahead > connection.max_readahead {
            context.wantedReadahead.withLock { $0 = settings.maxReadahead }
        }
        connection.max_readahead = min(settings.maxReadahead, connection.max_readahead)
        connection.max_background = UInt32(settings.maxBackground)
        connection.congestion_threshold = UInt32(settings.maxBackground) * 3 / 4
        want(FUSE_CAP_ASYNC_READ, true)
        want(FUSE_CAP_READDIRPLUS, settings.readdirplus)
        // Always readdirplus when enabled: the attributes come with the listing at no extra cost.
        want(FUSE_CAP_READDIRPLUS_AUTO, false)
        want(FUSE_CAP_SPLICE_WRITE, true)
        // Moving pages lets the kernel steal them from the cache file's page cache; with splice
        // actually in use (512 KiB reads) that read back wrong bytes in 2 of 4 runs (DECISIONS 50).
        want(FUSE_CAP_SPLICE_MOVE, false)
        want(FUSE_CAP_CACHE_SYMLINKS, settings.cacheSymlinks)
        // libfuse 3.14 cannot ask for it: the session edits libfuse's INIT reply (PassthroughNegotiation).
        context.wantsPassthrough.withLock { $0 = settings.passthrough }
    }
}

// MARK: - Names and attributes

private func fuseLookup(_ raw: OpaquePointer?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    let name = copyName(name)
    let now = FuseRequest(raw).session.operations.lookupNow(parent: inode(parent), name: name)
    if answered(raw, now, reply: { $0.entry($1) }) { return }
    respondEntry(raw) { try await $0.lookup(parent: inode(parent), name: name, context: $1) }
}

private func fuseForget(_ raw: OpaquePointer?, _ ino: fuse_ino_t, _ count: UInt64) {
    forget(raw, [(inode(ino), count)])
}

private func fuseForgetMulti(
    _ raw: OpaquePointer?, _ count: Int, _ forgets: UnsafeMutablePointer<fuse_forget_data>?
) {
    let items = UnsafeBufferPointer(start: forgets, count: count).map { (inode($0.ino), $0.nlookup) }
    forget(raw, items)
}

/// Forget has no answer: `fuse_reply_none` frees the request at once; the filesystem hears of
/// it from a task the session still waits for.
private func forget(_ raw: OpaquePointer?, _ items: [(InodeNumber, UInt64)]) {
    let session = FuseRequest(raw).session
    fuse_reply_none(raw)
    session.inFlight.enter()
    Task {
        for (inode, count) in items {
            await session.operations.forget(inode: inode, count: count)
        }
        session.inFlight.leave()
    }
}

private func fuseGetattr(_ raw: OpaquePointer?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let now = FuseRequest(raw).session.operations.getattrNow(inode: inode(ino))
    if answered(raw, now, reply: { $0.attributes($1) }) { return }
    respond(raw, { try await $0.getattr(inode: inode(ino), context: $1) }) {
        (answer: consuming Reply, attributes: AttributesReply) in answer.attributes(attributes)
    }
}

private func fuseSetattr(
    _ raw: OpaquePointer?, _ ino: fuse_ino_t, _ attributes: UnsafeMutablePointer<stat>?, _ toSet: Int32,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    let changes = attributeChanges(attributes!.pointee, toSet)
    let handle = info.map { FileHandle($0.pointee.fh) }
    respond(raw, { try await $0.setattr(inode: inode(ino), changes: changes, handle: handle, context: $1) }) {
        (answer: consuming Reply, attributes: AttributesReply) in answer.attributes(attributes)
    }
}

private func attributeChanges(_ attributes: stat, _ toSet: Int32) -> AttributeChanges {
    func isSet(_ flag: Int32) -> Bool { toSet & flag != 0 }
    var changes = AttributeChanges()
    if isSet(FUSE_SET_ATTR_MODE) { changes.permissions = UInt16(attributes.st_mode & 0o7777) }
    if isSet(FUSE_SET_ATTR_UID) { changes.uid = attributes.st_uid }
    if isSet(FUSE_SET_ATTR_GID) { changes.gid = attributes.st_gid }
    if isSet(FUSE_SET_ATTR_SIZE) { changes.size = UInt64(attributes.st_size) }
    if isSet(FUSE_SET_ATTR_ATIME_NOW) {
        changes.accessTime = .now
    } else if isSet(FUSE_SET_ATTR_ATIME) {
        changes.accessTime = .time(FileTime(attributes.st_atim))
    }
    if isSet(FUSE_SET_ATTR_MTIME_NOW) {
        changes.modificationTime = .now
    } else if isSet(FUSE_SET_ATTR_MTIME) {
        changes.modificationTime = .time(FileTime(attributes.st_mtim))
    }
    return changes
}

private func fuseReadlink(_ raw: OpaquePointer?, _ ino: fuse_ino_t) {
    respond(raw, { try await $0.readlink(inode: inode(ino), context: $1) }) {
        (answer: consuming Reply, target: [UInt8]) in answer.readlink(target)
    }
}

private func fuseMknod(
    _ raw: OpaquePointer?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t, _ device: dev_t
) {
    let name = copyName(name)
    respondEntry(raw) {
        try await $0.mknod(parent: inode(parent), name: name, mode: mode, device: UInt64(device), context: $1)
    }
}

private func fuseMkdir(_ raw: OpaquePointer?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t) {
    let name = copyName(name)
    respondEntry(raw) { try await $0.mkdir(parent: inode(parent), name: name, mode: mode, context: $1) }
}

private func fuseUnlink(_ raw: OpaquePointer?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    let name = copyName(name)
    respondEmpty(raw) { try await $0.unlink(parent: inode(parent), name: name, context: $1) }
}

private func fuseRmdir(_ raw: OpaquePointer?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    let name = copyName(name)
    respondEmpty(raw) { try await $0.rmdir(parent: inode(parent), name: name, context: $1) }
}

private func fuseSymlink(
    _ raw: OpaquePointer?, _ target: UnsafePointer<CChar>?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?
) {
    let target = copyName(target)
    let name = copyName(name)
    respondEntry(raw) { try await $0.symlink(target: target, parent: inode(parent), name: name, context: $1) }
}

private func fuseRename(
    _ raw: OpaquePointer?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ newParent: fuse_ino_t,
    _ newName: UnsafePointer<CChar>?, _ flags: UInt32
) {
    let name = copyName(name)
    let newName = copyName(newName)
    respondEmpty(raw) {
        try await $0.rename(
            parent: inode(parent), name: name, newParent: inode(newParent), newName: newName, flags: flags,
            context: $1)
    }
}

private func fuseLink(
    _ raw: OpaquePointer?, _ ino: fuse_ino_t, _ newParent: fuse_ino_t, _ newName: UnsafePointer<CChar>?
) {
    let newName = copyName(newName)
    respondEntry(raw) {
        try await $0.link(inode: inode(ino), newParent: inode(newParent), newName: newName, context: $1)
    }
}

// MARK: - Files

private func fuseOpen(_ raw: OpaquePointer?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let flags = info?.pointee.flags ?? 0
    let request = FuseRequest(raw)
    let now = request.session.operations.openNow(inode: inode(ino), flags: flags, context: request.context)
    if answered(raw, now, reply: { $0.open($1) }) { return }
    respond(raw, { try await $0.open(inode: inode(ino), flags: flags, context: $1) }) {
        (answer: consuming Reply, open: OpenReply) in answer.open(open)
    }
}

private func fuseCreate(
    _ raw: OpaquePointer?, _ parent: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ mode: mode_t,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    let name = copyName(name)
    let flags = info?.pointee.flags ?? 0
    respond(raw, { try await $0.create(parent: inode(parent), name: name, mode: mode, flags: flags, context: $1) }) {
        (answer: consuming Reply, created: (Entry, OpenReply)) in answer.create(created.0, created.1)
    }
}

private func fuseRead(
    _ raw: OpaquePointer?, _ ino: fuse_ino_t, _ size: Int, _ offset: off_t,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    let handle = handle(info)
    let request = FuseRequest(raw)
    let now = request.session.operations.readNow(
        inode: inode(ino), handle: handle, offset: UInt64(offset), size: size, context: request.context)
    if answered(raw, now, reply: { $0.read($1) }) { return }
    respond(
        raw,
        { try await $0.read(inode: inode(ino), handle: handle, offset: UInt64(offset), size: size, context: $1) }
    ) { (answer: consuming Reply, data: ReadReply) in answer.read(data) }
}

private func fuseWrite(
    _ raw: OpaquePointer?, _ ino: fuse_ino_t, _ buffer: UnsafePointer<CChar>?, _ size: Int, _ offset: off_t,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    let bytes = Array(UnsafeRawBufferPointer(start: buffer, count: size))
    let handle = handle(info)
    respond(
        raw,
        { try await $0.write(inode: inode(ino), handle: handle, offset: UInt64(offset), bytes: bytes, context: $1) }
    ) { (answer: consuming Reply, count: Int) in answer.written(count) }
}

private func fuseFlush(_ raw: OpaquePointer?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let handle = handle(info)
    let flushed = FuseRequest(raw).session.operations.flushNow(inode: inode(ino), handle: handle)
    if answered(raw, flushed ? () : nil, reply: { answer, _ in answer.ok() }) { return }
    respondEmpty(raw) { try await $0.flush(inode: inode(ino), handle: handle, context: $1) }
}

private func fuseRelease(_ raw: OpaquePointer?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let handle = handle(info)
    let flags = info?.pointee.flags ?? 0
    let released = FuseRequest(raw).session.operations.releaseNow(inode: inode(ino), handle: handle)
    if answered(raw, released ? () : nil, reply: { answer, _ in answer.ok() }) { return }
    respondEmpty(raw) { operations, _ in try await operations.release(inode: inode(ino), handle: handle, flags: flags) }
}

private func fuseFsync(
    _ raw: OpaquePointer?, _ ino: fuse_ino_t, _ dataOnly: Int32, _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    let handle = handle(info)
    respondEmpty(raw) {
        try await $0.fsync(inode: inode(ino), handle: handle, dataOnly: dataOnly != 0, context: $1)
    }
}

private func fuseFallocate(
    _ raw: OpaquePointer?, _ ino: fuse_ino_t, _ mode: Int32, _ offset: off_t, _ length: off_t,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    let handle = handle(info)
    respondEmpty(raw) {
        try await $0.fallocate(
            inode: inode(ino), handle: handle, mode: mode, offset: UInt64(offset), length: UInt64(length),
            context: $1)
    }
}

// MARK: - Directories

private func fuseOpendir(_ raw: OpaquePointer?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let flags = info?.pointee.flags ?? 0
    let now = FuseRequest(raw).session.operations.opendirNow(inode: inode(ino))
    if answered(raw, now, reply: { $0.open($1) }) { return }
    respond(raw, { try await $0.opendir(inode: inode(ino), flags: flags, context: $1) }) {
        (answer: consuming Reply, open: OpenReply) in answer.open(open)
    }
}

private func fuseReaddir(
    _ raw: OpaquePointer?, _ ino: fuse_ino_t, _ size: Int, _ offset: off_t,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    readdir(raw, ino, size, offset, info, isPlus: false)
}

private func fuseReaddirplus(
    _ raw: OpaquePointer?, _ ino: fuse_ino_t, _ size: Int, _ offset: off_t,
    _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    readdir(raw, ino, size, offset, info, isPlus: true)
}

private func readdir(
    _ raw: OpaquePointer?, _ ino: fuse_ino_t, _ size: Int, _ offset: off_t,
    _ info: UnsafeMutablePointer<fuse_file_info>?, isPlus: Bool
) {
    let handle = handle(info)
    let position = UInt64(bitPattern: Int64(offset))
    var now = DirectoryBuffer(capacity: size, isPlus: isPlus)
    let filled = FuseRequest(raw).session.operations.readdirNow(
        inode: inode(ino), handle: handle, offset: position, into: &now)
    if answered(raw, filled ? now : nil, reply: { $0.directory($1) }) { return }
    respond(
        raw,
        { operations, context in
            var buffer = DirectoryBuffer(capacity: size, isPlus: isPlus)
            try await operations.readdir(
                inode: inode(ino), handle: handle, offset: position, into: &buffer, context: context)
            return buffer
        }
    ) { (answer: consuming Reply, buffer: DirectoryBuffer) in answer.directory(buffer) }
}

private func fuseReleasedir(_ raw: OpaquePointer?, _ ino: fuse_ino_t, _ info: UnsafeMutablePointer<fuse_file_info>?) {
    let handle = handle(info)
    let released = FuseRequest(raw).session.operations.releasedirNow(inode: inode(ino), handle: handle)
    if answered(raw, released ? () : nil, reply: { answer, _ in answer.ok() }) { return }
    respondEmpty(raw) { operations, _ in try await operations.releasedir(inode: inode(ino), handle: handle) }
}

private func fuseFsyncdir(
    _ raw: OpaquePointer?, _ ino: fuse_ino_t, _ dataOnly: Int32, _ info: UnsafeMutablePointer<fuse_file_info>?
) {
    let handle = handle(info)
    respondEmpty(raw) {
        try await $0.fsyncdir(inode: inode(ino), handle: handle, dataOnly: dataOnly != 0, context: $1)
    }
}

// MARK: - Filesystem, access and extended attributes

private func fuseStatfs(_ raw: OpaquePointer?, _ ino: fuse_ino_t) {
    respond(raw, { operations, _ in try await operations.statfs(inode: inode(ino)) }) {
        (answer: consuming Reply, statistics: FileSystemStatistics) in answer.statfs(statistics)
    }
}

private func fuseAccess(_ raw: OpaquePointer?, _ ino: fuse_ino_t, _ mask: Int32) {
    respondEmpty(raw) { try await $0.access(inode: inode(ino), mask: mask, context: $1) }
}

private func fuseSetxattr(
    _ raw: OpaquePointer?, _ ino: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?,
    _ size: Int, _ flags: Int32
) {
    let name = String(cString: name!)
    let value = Array(UnsafeRawBufferPointer(start: value, count: size))
    respondEmpty(raw) {
        try await $0.setxattr(inode: inode(ino), name: name, value: value, flags: flags, context: $1)
    }
}

private func fuseGetxattr(_ raw: OpaquePointer?, _ ino: fuse_ino_t, _ name: UnsafePointer<CChar>?, _ size: Int) {
    let name = String(cString: name!)
    respond(raw, { try await $0.getxattr(inode: inode(ino), name: name, context: $1) }) {
        (answer: consuming Reply, value: [UInt8]) in answer.xattr(value, size: size)
    }
}

private func fuseListxattr(_ raw: OpaquePointer?, _ ino: fuse_ino_t, _ size: Int) {
    respond(raw, { try await $0.listxattr(inode: inode(ino), context: $1) }) {
        (answer: consuming Reply, names: [String]) in
        // The kernel's format: each name followed by a NUL.
        answer.xattr(names.flatMap { Array($0.utf8) + [0] }, size: size)
    }
}

private func fuseRemovexattr(_ raw: OpaquePointer?, _ ino: fuse_ino_t, _ name: UnsafePointer<CChar>?) {
    let name = String(cString: name!)
    respondEmpty(raw) { try await $0.removexattr(inode: inode(ino), name: name, context: $1) }
}
