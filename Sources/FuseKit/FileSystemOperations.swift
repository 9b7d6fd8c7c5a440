import Foundation
import SystemPackage

/// The filesystem FuseKit serves: one async method per low-level FUSE operation.
///
/// FuseKit copies each request's arguments, calls the method from a new task and replies exactly
/// once with what it returns; a thrown `Errno` becomes that error reply, anything else EIO. The
/// methods can therefore be called directly, without /dev/fuse, which is how VFS is tested. The
/// few synchronous `…Now` methods are tried first, on the session thread, and answer only what
/// they can without waiting.
///
/// Write-type operations have default implementations that throw EROFS, so a read-only
/// filesystem implements only the read side.
public protocol FileSystemOperations: Sendable {
    /// Called once when the kernel connects; adjust `settings` to ask for capabilities.
    func initialize(settings: inout ConnectionSettings)
    /// Called once when the session ends (unmount or signal), before FuseKit returns from `run`.
    func shutdown() async

    func lookup(parent: InodeNumber, name: [UInt8], context: RequestContext) async throws -> Entry
    /// A lookup answered on the session thread, before any task is made; nil hands the request to
    /// `lookup`. For what memory or a brief read of local state can answer: it blocks every other
    /// request while it runs, and must never wait for the remote or for a task.
    func lookupNow(parent: InodeNumber, name: [UInt8]) -> Entry?
    /// The kernel drops `count` references to `inode`. No reply.
    func forget(inode: InodeNumber, count: UInt64) async
    func getattr(inode: InodeNumber, context: RequestContext) async throws -> AttributesReply
    /// A getattr answered on the session thread, as `lookupNow`; nil hands it to `getattr`.
    func getattrNow(inode: InodeNumber) -> AttributesReply?
    func readlink(inode: InodeNumber, context: RequestContext) async throws -> [UInt8]
    func open(inode: InodeNumber, flags: Int32, context: RequestContext) async throws -> OpenReply
    /// An open answered on the session thread, as `lookupNow`; nil hands it to `open`.
    func openNow(inode: InodeNumber, flags: Int32, context: RequestContext) -> OpenReply?
    func read(inode: InodeNumber, handle: FileHandle, offset: UInt64, size: Int, context: RequestContext)
        async throws -> ReadReply
    /// A read answered on the session thread, as `lookupNow`; nil hands it to `read`.
    func readNow(inode: InodeNumber, handle: FileHandle, offset: UInt64, size: Int, context: RequestContext)
        -> ReadReply?
    func flush(inode: InodeNumber, handle: FileHandle, context: RequestContext) async throws
    /// A flush answered on the session thread, as `lookupNow`; false hands it to `flush`.
    func flushNow(inode: InodeNumber, handle: FileHandle) -> Bool
    func release(inode: InodeNumber, handle: FileHandle, flags: Int32) async throws
    /// A release answered on the session thread, as `lookupNow`; false hands it to `release`.
    func releaseNow(inode: InodeNumber, handle: FileHandle) -> Bool
    func opendir(inode: InodeNumber, flags: Int32, context: RequestContext) async throws -> OpenReply
    /// An opendir answered on the session thread, as `lookupNow`; nil hands it to `opendir`.
    func opendirNow(inode: InodeNumber) -> OpenReply?
    /// Fill `buffer` with entries from `offset` on (0 = the start; otherwise an offset an earlier
    /// answer gave as `nextOffset`). An empty buffer means the end.
    func readdir(
        inode: InodeNumber, handle: FileHandle, offset: UInt64, into buffer: inout DirectoryBuffer,
        context: RequestContext
    ) async throws
    /// A readdir answered on the session thread, as `lookupNow`; false (with `buffer` left empty)
    /// hands it to `readdir`.
    func readdirNow(inode: InodeNumber, handle: FileHandle, offset: UInt64, into buffer: inout DirectoryBuffer) -> Bool
    func releasedir(inode: InodeNumber, handle: FileHandle) async throws
    /// A releasedir answered on the session thread, as `lookupNow`; false hands it to `releasedir`.
    func releasedirNow(inode: InodeNumber, handle: FileHandle) -> Bool
    func statfs(inode: InodeNumber) async throws -> FileSystemStatistics
    func access(inode: InodeNumber, mask: Int32, context: RequestContext) async throws
    /// The value of one extended attribute; throw ENODATA when it is absent. FuseKit handles the
    /// size probe (size 0) and ERANGE.
    func getxattr(inode: InodeNumber, name: String, context: RequestContext) async throws -> [UInt8]
    /// The names of the extended attributes; FuseKit packs them and handles size and ERANGE.
    func listxattr(inode: InodeNumber, context: RequestContext) async throws -> [String]

    // Write side: EROFS unless implemented.
    func setattr(inode: InodeNumber, changes: AttributeChanges, handle: FileHandle?, context: RequestContext)
        async throws -> AttributesReply
    func mknod(parent: InodeNumber, name: [UInt8], mode: UInt32, device: UInt64, context: RequestContext)
        async throws -> Entry
    func mkdir(parent: InodeNumber, name: [UInt8], mode: UInt32, context: RequestContext) async throws -> Entry
    func unlink(parent: InodeNumber, name: [UInt8], context: RequestContext) async throws
    func rmdir(parent: InodeNumber, name: [UInt8], context: RequestContext) async throws
    func symlink(target: [UInt8], parent: InodeNumber, name: [UInt8], context: RequestContext) async throws -> Entry
    func rename(
        parent: InodeNumber, name: [UInt8], newParent: InodeNumber, newName: [UInt8], flags: UInt32,
        context: RequestContext
    ) async throws
    func link(inode: InodeNumber, newParent: InodeNumber, newName: [UInt8], context: RequestContext) async throws
        -> Entry
    func create(parent: InodeNumber, name: [UInt8], mode: UInt32, flags: Int32, context: RequestContext)
        async throws -> (Entry, OpenReply)
    func write(
        inode: InodeNumber, handle: FileHandle, offset: UInt64, bytes: [UInt8], context: RequestContext
    ) async throws -> Int
    func fsync(inode: InodeNumber, handle: FileHandle, dataOnly: Bool, context: RequestContext) async throws
    func fsyncdir(inode: InodeNumber, handle: FileHandle, dataOnly: Bool, context: RequestContext) async throws
    func setxattr(inode: InodeNumber, name: String, value: [UInt8], flags: Int32, context: RequestContext)
        async throws
    func removexattr(inode: InodeNumber, name: String, context: RequestContext) async throws
    func fallocate(
        inode: InodeNumber, handle: FileHandle, mode: Int32, offset: UInt64, length: UInt64, context: RequestContext
    ) async throws
}

/// The fields a setattr changes; nil means unchanged.
public struct AttributeChanges: Sendable, Hashable {
    public var permissions: UInt16?
    public var uid: UInt32?
    public var gid: UInt32?
    public var size: UInt64?
    public var accessTime: TimeChange?
    public var modificationTime: TimeChange?

    public init(
        permissions: UInt16? = nil, uid: UInt32? = nil, gid: UInt32? = nil, size: UInt64? = nil,
        accessTime: TimeChange? = nil, modificationTime: TimeChange? = nil
    ) {
        self.permissions = permissions
        self.uid = uid
        self.gid = gid
        self.size = size
        self.accessTime = accessTime
        self.modificationTime = modificationTime
    }
}

extension FileSystemOperations {
    public func initialize(settings: inout ConnectionSettings) {}
    public func lookupNow(parent: InodeNumber, name: [UInt8]) -> Entry? { nil }
    public func getattrNow(inode: InodeNumber) -> AttributesReply? { nil }
    public func openNow(inode: InodeNumber, flags: Int32, context: RequestContext) -> OpenReply? { nil }
    public func readNow(inode: InodeNumber, handle: FileHandle, offset: UInt64, size: Int, context: RequestContext)
        -> ReadReply?
    { nil }
    public func flushNow(inode: InodeNumber, handle: FileHandle) -> Bool { false }
    public func releaseNow(inode: InodeNumber, handle: FileHandle) -> Bool { false }
    public func opendirNow(inode: InodeNumber) -> OpenReply? { nil }
    public func readdirNow(inode: InodeNumber, handle: FileHandle, offset: UInt64, into buffer: inout DirectoryBuffer)
        -> Bool
    { false }
    public func releasedirNow(inode: InodeNumber, handle: FileHandle) -> Bool { false }
    public func shutdown() async {}

    public func setattr(inode: InodeNumber, changes: AttributeChanges, handle: FileHandle?, context: RequestContext)
        async throws -> AttributesReply
    { throw Errno.readOnlyFileSystem }
    public func mknod(parent: InodeNumber, name: [UInt8], mode: UInt32, device: UInt64, context: RequestContext)
        async throws -> Entry
    { throw Errno.readOnlyFileSystem }
    public func mkdir(parent: InodeNumber, name: [UInt8], mode: UInt32, context: RequestContext) async throws -> Entry {
        throw Errno.readOnlyFileSystem
    }
    public func unlink(parent: InodeNumber, name: [UInt8], context: RequestContext) async throws {
        throw Errno.readOnlyFileSystem
    }
    public func rmdir(parent: InodeNumber, name: [UInt8], context: RequestContext) async throws {
        throw Errno.readOnlyFileSystem
    }
    public func symlink(target: [UInt8], parent: InodeNumber, name: [UInt8], context: RequestContext) async throws
        -> Entry
    { throw Errno.readOnlyFileSystem }
    public func rename(
        parent: InodeNumber, name: [UInt8], newParent: InodeNumber, newName: [UInt8], flags: UInt32,
        context: RequestContext
    ) async throws { throw Errno.readOnlyFileSystem }
    public func link(inode: InodeNumber, newParent: InodeNumber, newName: [UInt8], context: RequestContext)
        async throws -> Entry
    { throw Errno.readOnlyFileSystem }
    public func create(parent: InodeNumber, name: [UInt8], mode: UInt32, flags: Int32, context: RequestContext)
        async throws -> (Entry, OpenReply)
    { throw Errno.readOnlyFileSystem }
    public func write(
        inode: InodeNumber, handle: FileHandle, offset: UInt64, bytes: [UInt8], context: RequestContext
    ) async throws -> Int { throw Errno.readOnlyFileSystem }
    public func fsync(inode: InodeNumber, handle: FileHandle, dataOnly: Bool, context: RequestContext) async throws {}
    public func fsyncdir(inode: InodeNumber, handle: FileHandle, dataOnly: Bool, context: RequestContext)
        async throws
    {}
    public func setxattr(inode: InodeNumber, name: String, value: [UInt8], flags: Int32, context: RequestContext)
        async throws
    { throw Errno.readOnlyFileSystem }
    public func removexattr(inode: InodeNumber, name: String, context: RequestContext) async throws {
        throw Errno.readOnlyFileSystem
    }
    public func fallocate(
        inode: InodeNumber, handle: FileHandle, mode: Int32, offset: UInt64, length: UInt64, context: RequestContext
    ) async throws { throw Errno.readOnlyFileSystem }
}
