/// The knobs of one mount's filesystem.
public struct VFSConfiguration: Sendable {
    /// How long the kernel may cache attributes and names. Long, because the store is the truth
    /// and changes reach the kernel as invalidations.
    public var attributeTimeout: Duration = .seconds(60)
    public var entryTimeout: Duration = .seconds(60)
    /// How long the kernel may remember that a name does not exist in a listed directory.
    public var negativeTimeout: Duration = .seconds(60)
    /// The bound on waiting for the remote: a call that makes no progress for this long fails
    /// with EHOSTDOWN (DESIGN §6).
    public var remoteTimeout: Duration = .seconds(30)
    /// The page size suggested to enumerators.
    public var suggestedPageSize = 1000
    /// Owner shown for every item: remotes have no Unix owners, so the mounting user owns all.
    public var uid: UInt32 = 0
    public var gid: UInt32 = 0
    /// The control socket's path, shown on the root as `user.fpfs.control` so that `fpfs status`
    /// finds the daemon from the mountpoint alone.
    public var controlSocketPath: String?

    public init() {}
}
