/// A file name as bytes, because POSIX names are bytes: any sequence of 1 to 255 bytes other than
/// `/` and NUL, and neither `.` nor `..`. Names that are not UTF-8 survive unchanged.
public struct Filename: Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The longest name Linux allows (NAME_MAX).
    public static let maximumLength = 255

    public let bytes: [UInt8]

    /// Accepts bytes as they are; call `validate()` where names come from outside.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    public init(_ string: String) { self.bytes = Array(string.utf8) }

    public init(stringLiteral value: String) { self.init(value) }

    /// The name as text; bytes that are not UTF-8 are shown as U+FFFD.
    public var description: String { String(decoding: bytes, as: UTF8.self) }

    /// The name as a String when it is valid UTF-8, nil otherwise.
    public var utf8String: String? { String(validating: bytes, as: UTF8.self) }

    /// True when the name can stand in a directory on Linux.
    public var isValid: Bool { bytes.count <= Self.maximumLength && isComponent }

    /// True when the name can stand between two slashes of a path, whatever its length: a remote
    /// may hold longer names than Linux shows (NTFS counts 255 UTF-16 units, a WebDAV server's
    /// hrefs have no limit), and such an entry is one item to skip, not a broken listing.
    public var isComponent: Bool {
        !bytes.isEmpty && !bytes.contains(0x2F) && !bytes.contains(0) && bytes != [0x2E] && bytes != [0x2E, 0x2E]
    }

    /// Throws `ProviderError.cannotSynchronize` for a name Linux cannot show.
    public func validate() throws {
        guard isValid else { throw ProviderError.cannotSynchronize(reason: "invalid filename \(self)") }
    }
}
