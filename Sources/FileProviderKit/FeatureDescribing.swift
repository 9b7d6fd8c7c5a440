/// What a remote can hold beyond files and folders.
public struct ProviderFeatures: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let symlinks = ProviderFeatures(rawValue: 1 << 0)
    /// `deleteItem` with `.toTrash` moves the item to the remote's trash.
    public static let trash = ProviderFeatures(rawValue: 1 << 1)

    public static let all: ProviderFeatures = [.symlinks, .trash]
}

/// A provider whose remote cannot hold everything (WebDAV has no symlinks, no trash, and no names
/// that are not UTF-8). The engine refuses such items when they are made — with ENOTSUP, or EILSEQ
/// for a name — instead of accepting them locally and failing to upload them later. A provider
/// that does not conform is taken to hold everything.
public protocol FeatureDescribing: FileProvider {
    var features: ProviderFeatures { get }

    /// Why the remote cannot hold an item named `name` in the folder `parent`, for the log; nil
    /// when it can. Called for every name the engine makes (create, mkdir, symlink, rename), so it
    /// must be quick and must not talk to the remote.
    func reasonItCannotHold(name: Filename, in parent: ItemIdentifier) -> String?

    /// Why the remote cannot hold `attributes` (an item's whole set of users' extended attributes,
    /// full names to values) on one item, for the log; nil when it can. The engine refuses the
    /// `setxattr` that would make such a set with E2BIG. Quick, and never talks to the remote.
    func reasonItCannotHold(attributes: [String: [UInt8]]) -> String?
}

extension FeatureDescribing {
    public func reasonItCannotHold(name: Filename, in parent: ItemIdentifier) -> String? { nil }
    public func reasonItCannotHold(attributes: [String: [UInt8]]) -> String? { nil }
}
