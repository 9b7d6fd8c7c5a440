/// The provider's name for an item: opaque to the engine, stable for the item's lifetime, and —
/// where the remote allows — unchanged by renames and moves.
public struct ItemIdentifier: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The top of the remote: the mount's root directory.
    public static let rootContainer = ItemIdentifier("fpfs.root")
    /// The remote's trash, for providers that support trashing.
    public static let trashContainer = ItemIdentifier("fpfs.trash")
    /// The set of every item the engine knows; its enumerator reports remote changes.
    public static let workingSet = ItemIdentifier("fpfs.workingSet")

    public var description: String { rawValue }
}
