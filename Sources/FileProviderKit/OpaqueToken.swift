/// Thrown when a provider builds a page or sync anchor larger than the contract allows.
public struct OpaqueTokenTooLarge: Error, Hashable, Sendable, CustomStringConvertible {
    public let byteCount: Int
    public var description: String {
        "opaque enumeration token of \(byteCount) bytes exceeds the limit of \(EnumerationPage.maximumLength)"
    }
}

/// Where an enumeration continues (NSFileProviderPage): opaque bytes the provider chose, at most
/// 500 of them. The engine stores pages and hands them back; it never looks inside.
public struct EnumerationPage: Hashable, Sendable, Codable {
    public static let maximumLength = 500

    public let bytes: [UInt8]

    /// Refuses more than 500 bytes, as the contract requires.
    public init(_ bytes: [UInt8]) throws(OpaqueTokenTooLarge) {
        guard bytes.count <= Self.maximumLength else { throw OpaqueTokenTooLarge(byteCount: bytes.count) }
        self.bytes = bytes
    }

    public init(_ string: String) throws(OpaqueTokenTooLarge) { try self.init(Array(string.utf8)) }

    /// The first page of any listing.
    public static let initial = EnumerationPage(uncheckedBytes: [])

    private init(uncheckedBytes: [UInt8]) { self.bytes = uncheckedBytes }

    /// True for `initial`.
    public var isInitial: Bool { bytes.isEmpty }
}

/// A point in the remote's history (NSFileProviderSyncAnchor): opaque bytes, at most 500, from
/// which `enumerateChanges` reports what happened since.
public struct SyncAnchor: Hashable, Sendable, Codable {
    public static let maximumLength = 500

    public let bytes: [UInt8]

    /// Refuses more than 500 bytes, as the contract requires.
    public init(_ bytes: [UInt8]) throws(OpaqueTokenTooLarge) {
        guard bytes.count <= Self.maximumLength else { throw OpaqueTokenTooLarge(byteCount: bytes.count) }
        self.bytes = bytes
    }

    public init(_ string: String) throws(OpaqueTokenTooLarge) { try self.init(Array(string.utf8)) }
}
