import FileProviderKit

/// A path below the provider's root folder, kept as name components because names are bytes that
/// need not be UTF-8.
struct RelativePath: Hashable, Sendable, CustomStringConvertible {
    /// The root folder itself.
    static let root = RelativePath(components: [])

    var components: [Filename]

    var isRoot: Bool { components.isEmpty }

    /// The last component; nil for the root.
    var name: Filename? { components.last }

    /// The folder holding this path; the root is its own parent.
    var parent: RelativePath { RelativePath(components: Array(components.dropLast())) }

    func appending(_ name: Filename) -> RelativePath { RelativePath(components: components + [name]) }

    /// True when `other` is this path or lies below it.
    func contains(_ other: RelativePath) -> Bool { other.components.starts(with: components) }

    /// The components joined by `/`, as bytes.
    var bytes: [UInt8] { Array(components.map(\.bytes).joined(separator: [0x2F])) }

    var description: String { String(decoding: bytes, as: UTF8.self) }
}
