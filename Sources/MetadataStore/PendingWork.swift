/// One entry of the journal as the uploader sees it.
public enum PendingWork: Sendable, Hashable {
    case change(PendingChange, ItemRecord)
    case deletion(PendingDeletion)

    public var sequence: Int64 {
        switch self {
        case .change(let change, _): change.sequence
        case .deletion(let deletion): deletion.sequence
        }
    }
}
