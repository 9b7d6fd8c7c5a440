import SystemPackage

/// Why a `FuseSession` could not mount or serve. libfuse also prints its own explanation to
/// standard error when it refuses options or a mount.
public enum FuseError: Error, Hashable, CustomStringConvertible {
    /// `fuse_session_new` rejected the arguments (usually an unknown mount option).
    case sessionCreationFailed(options: String)
    /// `fuse_session_mount` failed: a missing mountpoint, no permission, no /dev/fuse.
    case mountFailed(mountpoint: String, Errno)
    /// `mount` was called on a session that was already mounted or has ended.
    case alreadyMounted
    /// `run` was called before `mount`, twice, or after the session ended.
    case notMounted
    /// Reading requests from /dev/fuse failed for a reason other than unmounting.
    case sessionFailed(Errno)

    public var description: String {
        switch self {
        case .sessionCreationFailed(let options): "libfuse rejected the mount options '\(options)'"
        case .mountFailed(let mountpoint, let errno): "cannot mount FUSE on \(mountpoint): \(errno)"
        case .alreadyMounted: "the FUSE session was already mounted"
        case .notMounted: "the FUSE session is not mounted"
        case .sessionFailed(let errno): "the FUSE session failed: \(errno)"
        }
    }
}
