import CFuse
import Dispatch
import SystemPackage

/// Tells the kernel that cached names, attributes or pages are stale.
///
/// Never call it from inside an operation on a related inode or directory, or from code that
/// such an operation waits for: the kernel may hold the locks the invalidation needs until that
/// operation is answered, and the two wait for each other. Send from a separate task.
///
/// The calls run on their own serial queue, since they block in the kernel. An inode or name the
/// kernel no longer caches (ENOENT) and a session that has ended (EBADF, ENODEV, or unmounted
/// already) are not errors: there is nothing left to invalidate.
public struct FuseNotifier: Sendable {
    private static let queue = DispatchQueue(label: "fpfs.fuse.notifications")

    let session: FuseSession

    /// Drops cached pages of `inode` from `offset` for `length` bytes (0: to the end) and its
    /// attributes; a negative `offset` drops only the attributes.
    public func invalidateInode(_ inode: InodeNumber, offset: Int64 = 0, length: Int64 = 0) async throws {
        try await send { fuse_lowlevel_notify_inval_inode($0, inode.rawValue, off_t(offset), off_t(length)) }
    }

    /// Drops the cached entry `name` in `parent` (and the parent's attributes).
    public func invalidateEntry(parent: InodeNumber, name: [UInt8]) async throws {
        try await send { session in
            name.withUnsafeBufferPointer { name in
                name.withMemoryRebound(to: CChar.self) {
                    fuse_lowlevel_notify_inval_entry(session, parent.rawValue, $0.baseAddress, $0.count)
                }
            }
        }
    }

    /// Tells the kernel that `name` in `parent`, which was `child`, is gone: like
    /// `invalidateEntry`, and also drops a matching dentry that processes are still using.
    public func notifyDelete(parent: InodeNumber, child: InodeNumber, name: [UInt8]) async throws {
        try await send { session in
            name.withUnsafeBufferPointer { name in
                name.withMemoryRebound(to: CChar.self) {
                    fuse_lowlevel_notify_delete(session, parent.rawValue, child.rawValue, $0.baseAddress, $0.count)
                }
            }
        }
    }

    private func send(_ notification: @escaping @Sendable (OpaquePointer) -> Int32) async throws {
        let session = self.session
        let status = await withCheckedContinuation { continuation in
            Self.queue.async { continuation.resume(returning: session.withLiveSession(notification) ?? 0) }
        }
        switch -status {
        case 0, ENOENT, EBADF, ENODEV: return
        default: throw Errno(rawValue: -status)
        }
    }
}
