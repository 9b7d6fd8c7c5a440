import GRDB

/// One journal entry as `fpfs status` shows it.
public struct PendingSummary: Sendable, Hashable, Codable, FetchableRecord {
    /// `create`, `change` or `delete`.
    public var action: String
    /// The item's name (a deletion: its remote identifier).
    public var name: String
    public var bytes: UInt64
    /// Failed attempts, and what the last one said.
    public var attempts: Int
    public var lastError: String?
    /// Being sent now.
    public var isSending: Bool
}
