/// Where the journal of local changes stands: the sequence of the latest change, and whether any
/// change still waits to be sent.
public struct JournalState: Sendable, Hashable {
    public var sequence: Int64
    public var isEmpty: Bool

    public init(sequence: Int64, isEmpty: Bool) {
        self.sequence = sequence
        self.isEmpty = isEmpty
    }
}
