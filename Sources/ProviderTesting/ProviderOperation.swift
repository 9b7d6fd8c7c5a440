/// The provider calls `CallRecorder` counts, one case per entry point of the contract, so a test
/// can assert how often the engine asked for what.
public enum ProviderOperation: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case item
    case enumerator
    case enumerateItems
    case enumerateChanges
    case currentSyncAnchor
    case fetchContents
    case fetchPartialContents
    case fetchIncrementalContents
    case createItem
    case modifyItem
    case deleteItem
    case invalidate

    /// True for the calls that move content and count against the engine's pipeline depth.
    public var isContentFetch: Bool {
        self == .fetchContents || self == .fetchPartialContents || self == .fetchIncrementalContents
    }

    public var description: String { rawValue }
}
