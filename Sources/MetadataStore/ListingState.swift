/// How much the store knows of a folder's children.
public enum ListingState: Int, Sendable {
    /// Never listed: its children are learned from the remote on first use.
    case unlisted = 0
    /// Listed to the end; changes reach it from the remote's change rounds.
    case complete = 1
    /// Listed, but to be listed again on next use (a change may have been missed); its children
    /// still serve when the remote cannot be reached.
    case stale = 2
}
