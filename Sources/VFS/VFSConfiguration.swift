/// The knobs of one mount's filesystem.
public struct VFSConfiguration: Sendable {
    /// How long the kernel may cache attributes and names. Long, because the store is the truth
    /// and changes reach the kernel as invalidations.
    public var attributeTimeout: Duration = .seconds(60)
    public var entryTimeout: Duration = .seconds(60)
    /// How long the kernel may remember that a name does not exist in a listed directory.
    public var negativeTimeout: Duration = .seconds(60)
    /// The bound on waiting for the remote: a call that makes no progress for this long fails
    /// with EHOSTDOWN (ARCHITECTURE §6).
    public var remoteTimeout: Duration = .seconds(30)
    /// The alignment of partial fetches and of the cache's block map: a power of two from 4 KiB
    /// to 64 MiB.
    public var blockSize: UInt64 = 64 << 10
    /// At most this many provider content fetches run at once (1...128).
    public var pipelineDepth = 8
    /// At most this many folders are listed ahead of a tree walk at once, and a walk is followed
    /// this many folders ahead (ListingAhead); 0 lists only what the kernel asks for.
    public var listingAheadDepth = 8
    /// At most this many journal entries are sent to the remote at once (1...128).
    public var uploadDepth = 4
    /// How long the journal must be quiet before its changes are sent; a settling period ends at
    /// most ten times this after its first change (Uploader, DECISIONS 108). In a burst that goes
    /// on, a change may wait up to `uploadBurstLag`.
    public var uploadSettle: Duration = .milliseconds(100)
    /// While a burst of changes goes on, what it made this long ago is sent meanwhile, one change
    /// at a time (Uploader, DECISIONS 117).
    public var uploadBurstLag: Duration = .seconds(30)
    /// The bound of the cache (block cache and clean local copies), in bytes; nil for none.
    /// Clean, unpinned, unopened contents beyond it are evicted, least recently used first.
    public var cacheSize: UInt64?
    /// Whether the mount asks the remote for its changes: at start, every `pollInterval` (never
    /// when nil) and on `fpfs signal` (ARCHITECTURE §5).
    public var replicatesChanges = true
    public var pollInterval: Duration? = .seconds(30)
    /// Called after every change round, whatever its outcome. A round may have read the whole
    /// tree and freed it again at its end: the daemon gives that memory back now, not at its
    /// next idle check (DECISIONS 135).
    public var changeRoundEnded: (@Sendable () -> Void)?
    /// The kernel reads complete cached contents itself (FUSE passthrough) where it can: the
    /// kernel offers it (6.9 on) and the daemon runs as root (`PassthroughFiles`).
    public var passthrough = true
    /// Every write-type operation fails with EROFS.
    public var isReadOnly = false
    /// unlink and rmdir move items to the remote's trash instead of deleting them (`--trash`;
    /// only where the provider has a trash).
    public var trashesDeletions = false
    /// How often the cache's durability epoch closes: the most time a downloaded block stays
    /// recorded while perhaps not on disk yet (DECISIONS 154).
    public var durabilityEpochLength: Duration = .seconds(30)
    /// Handles that read files of at least this size through the daemon use direct I/O: the
    /// bytes stay in memory once, as the cache file's pages, not twice (DECISIONS 155).
    public var directIOFileSize: UInt64 = 64 << 20
    /// The largest read-ahead window of one handle.
    public var maximumReadAhead: UInt64 = 128 << 20
    /// The largest single read-ahead request (rounded down to whole blocks, at least one): a
    /// sequential reader's window is fetched in aligned runs of blocks up to this size
    /// (`ReadAheadWindow`), and a pinned file's whole content too.
    public var readAheadRequestSize: UInt64 = 16 << 20
    /// Processes that may not cause downloads (exact names; see `ProcessGate`).
    public var nonMaterializingProcesses: Set<String> = VFSConfiguration.defaultNonMaterializingProcesses
    /// The page size suggested to enumerators.
    public var suggestedPageSize = 1000
    /// Owner shown for every item: remotes have no Unix owners, so the mounting user owns all.
    public var uid: UInt32 = 0
    public var gid: UInt32 = 0
    /// Mode bits taken away from every item's permissions as shown (and as `access(2)` checks).
    public var umask: UInt16 = 0
    /// The control socket's path, shown on the root as `user.fpfs.control` so that `fpfs status`
    /// finds the daemon from the mountpoint alone.
    public var controlSocketPath: String?

    /// The common Linux indexers and thumbnailers (ARCHITECTURE §3).
    public static var defaultNonMaterializingProcesses: Set<String> { ProcessGate.defaultNames }

    public init() {}
}
