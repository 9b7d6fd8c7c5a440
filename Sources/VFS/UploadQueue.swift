import MetadataStore

/// What waits to be sent to the remote, for `fpfs status` and `fpfs sync`.
public struct UploadQueue: Sendable, Hashable, Codable {
    /// Journal entries waiting or being sent.
    public var pending: Int
    /// Of those, the ones whose last attempt failed.
    public var failing: Int
    /// Of those, the ones the remote refused (not a passing failure), which wait ten minutes or
    /// the next `fpfs sync` before they are tried again. Absent in the answers of older daemons.
    public var refused: Int?
    /// Bytes of contents they will send.
    public var bytes: UInt64
    /// The first entries, in the order they will be sent.
    public var first: [PendingSummary]

    public init(pending: Int, failing: Int, refused: Int, bytes: UInt64, first: [PendingSummary]) {
        self.pending = pending
        self.failing = failing
        self.refused = refused
        self.bytes = bytes
        self.first = first
    }
}
