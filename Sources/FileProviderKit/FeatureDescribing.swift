/// What a remote can hold beyond files and folders.
public struct ProviderFeatures: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let symlinks = ProviderFeatures(rawValue: 1 << 0)

    public static let all: ProviderFeatures = [.symlinks]
}

/// A provider whose remote cannot hold everything (WebDAV has no symlinks). The engine refuses
/// such items when they are made, with ENOTSUP, instead of accepting them locally and failing to
/// upload them later. A provider that does not conform is taken to hold everything.
public protocol FeatureDescribing: FileProvider {
    var features: ProviderFeatures { get }
}
