import GRDB

/// One journal entry as `fpfs status` shows it.
public struct PendingSummary: Sendable, Hashable, Codable, FetchableRecord {
    /// `create`, `change` or `delete`.
    public var action: String
    /// The item's name (a deletion: its path when deleted here, or its remote identifier for one
    /// journalled before the store kept paths).
    public var name: String
    public var bytes: UInt64
    /// Failed attempts, and what the last one said.
    public var attempts: Int
    public var lastError: String?
    /// Being sent now.
    public var isSending: Bool
    /// Its place in the journal. Absent in the answers of older daemons.
    public var sequence: Int64?
    /// What it waits for, when the uploader passed over it because of another entry (the
    /// creation of its folder, an earlier rename or deletion), and whether that one cannot go
    /// while the remote refuses it: then this one is stuck. Absent when it waits for nothing.
    public var waitsFor: String?
    public var isStuck: Bool?
}
