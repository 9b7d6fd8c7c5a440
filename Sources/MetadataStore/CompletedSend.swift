/// What the store made of the remote's answer to a creation or modification
/// (`completeCreation`, `completeModification`).
public struct CompletedSend: Sendable {
    /// What the item took from the answer; nil when it was deleted here while it was sent (its
    /// pending deletion names the answer's item instead).
    public var identity: RemoteIdentity?
    /// Items a round learned under the answer's identifier while the send was under way, after the
    /// item was deleted here: they were that item, made by this send, and left the store with no
    /// local work of their own (DECISIONS 318).
    public var displaced: [ItemRecord] = []
}
