import CFuse
import Glibc
import SystemPackage

/// A backing file registered with the kernel for FUSE passthrough, named in `OpenReply.backing`.
public struct BackingID: Sendable, Hashable {
    public let rawValue: Int32

    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }
}

/// Where a filesystem registers the files the kernel may read for it (FUSE passthrough).
public protocol BackingFileRegistry: Sendable {
    /// Registers an open file; the kernel keeps its own reference, so `file` may be closed after.
    /// Throws ENOTSUP when the mount has no passthrough, or what the kernel refused with (EPERM
    /// without CAP_SYS_ADMIN, ELOOP for a file on a stacked filesystem such as an overlay).
    func register(_ file: FileDescriptor) throws(Errno) -> BackingID
    /// Forgets an id. Handles opened with it keep reading their file; later opens cannot name it.
    func unregister(_ id: BackingID)
    /// Whether the kernel maps handles opened with direct I/O (`OpenReply.directIO`) shared;
    /// without it, their `mmap` with MAP_SHARED fails with ENODEV.
    var mapsDirectIOFiles: Bool { get }
}

extension BackingFileRegistry {
    public var mapsDirectIOFiles: Bool { false }
}

/// A session's `BackingFileRegistry`: the kernel's FUSE_DEV_IOC_BACKING_OPEN and _CLOSE on the
/// session's /dev/fuse descriptor. The calls are short ioctls, made on the caller's thread.
public struct BackingFiles: BackingFileRegistry {
    let session: FuseSession

    public func register(_ file: FileDescriptor) throws(Errno) -> BackingID {
        guard session.passthroughNegotiated else { throw .notSupported }
        // The id, or -errno: errno is read before anything else can change it.
        let result = session.withLiveSession { session in
            let id = cfuse_backing_open(fuse_session_fd(session), file.rawValue)
            return id > 0 ? id : -errno
        }
        guard let result else { throw Errno(rawValue: ENODEV) }
        guard result > 0 else { throw Errno(rawValue: -result) }
        return BackingID(rawValue: result)
    }

    public var mapsDirectIOFiles: Bool { session.directIOMapsNegotiated }

    public func unregister(_ id: BackingID) {
        _ = session.withLiveSession { cfuse_backing_close(fuse_session_fd($0), UInt32(bitPattern: id.rawValue)) }
    }
}
