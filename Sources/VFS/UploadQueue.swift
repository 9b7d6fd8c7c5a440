import MetadataStore

/// What waits to be sent to the remote, for `fpfs status` and `fpfs sync`.
public struct UploadQueue: Sendable, Hashable, Codable {
    /// Journal entries waiting or being sent.
    public var pending: Int
    /// Of those, the ones whose last attempt failed.
    public var failing: Int
    /// Bytes of contents they will send.
    public var bytes: UInt64
    /// The first entries, in the order they will be sent.
    public var first: [PendingSummary]

    public init(pending: Int, failing: Int, bytes: UInt64, first: [PendingSummary]) {
        self.pending = pending
        self.failing = failing
        self.bytes = bytes
        self.first = first
    }
}
