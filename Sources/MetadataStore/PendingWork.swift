import FileProviderKit

/// One entry of the journal as the uploader sees it.
public enum PendingWork: Sendable, Hashable {
    /// A change, with what the uploader decides on before it begins: the item's parent (a change
    /// waits while that exists only here). `beginSending` reads the rest; the journal's head is
    /// read again after every send, so it reads little.
    case change(PendingChange, parent: ItemIdentifier)
    case deletion(PendingDeletion)

    public var sequence: Int64 {
        switch self {
        case .change(let change, _): change.sequence
        case .deletion(let deletion): deletion.sequence
        }
    }
}
