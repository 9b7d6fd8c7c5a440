import FileProviderKit

/// A path below the mounted collection, as the names of its components: what identifiers are made
/// of and what URLs are made from.
///
/// Servers percent-encode hrefs each in their own way, so a path is kept decoded and encoded again
/// one canonical way. Identifiers are `/` followed by the canonical encoding (the root is
/// `rootContainer`), which is stable for an item as long as its path does not change.
struct RemotePath: Hashable, Sendable, CustomStringConvertible {
    /// The components, each a valid filename.
    let components: [Filename]

    static let root = RemotePath(components: [])

    init(components: [Filename]) {
        self.components = components
    }

    /// The path an identifier stands for; nil for identifiers this provider never hands out.
    init?(identifier: ItemIdentifier) {
        if identifier == .rootContainer {
            self = .root
            return
        }
        guard identifier.rawValue.hasPrefix("/"), let path = Self.decode(identifier.rawValue.dropFirst()) else {
            return nil
        }
        self = path
    }

    /// Decodes a percent-encoded relative path ("a/b%20c"); nil when a component is empty, `.`,
    /// `..`, or holds `/` or NUL once decoded.
    static func decode(_ encoded: Substring) -> RemotePath? {
        if encoded.isEmpty { return .root }
        var components: [Filename] = []
        for part in encoded.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            guard let bytes = percentDecoded(part), let name = component(bytes) else { return nil }
            components.append(name)
        }
        return RemotePath(components: components)
    }

    /// `bytes` as a path component: nil when empty, `.`, `..` or holding `/` or NUL. A name longer
    /// than Linux allows is a component: the engine skips its item (DECISIONS 181).
    static func component(_ bytes: [UInt8]) -> Filename? {
        let name = Filename(bytes: bytes)
        return name.isComponent ? name : nil
    }

    var identifier: ItemIdentifier { components.isEmpty ? .rootContainer : ItemIdentifier("/" + encoded) }

    /// The canonical encoding, without a leading slash: unreserved characters stay, all else is %XX.
    var encoded: String {
        components.map { Self.percentEncoded($0.bytes) }.joined(separator: "/")
    }

    var parent: RemotePath { RemotePath(components: components.dropLast()) }
    var name: Filename? { components.last }

    func appending(_ name: Filename) -> RemotePath { RemotePath(components: components + [name]) }

    /// True when `self` is `other` or lies below it.
    func isWithin(_ other: RemotePath) -> Bool { components.starts(with: other.components) }

    var description: String {
        "/" + components.map { String(decoding: $0.bytes, as: UTF8.self) }.joined(separator: "/")
    }

    static func percentEncoded(_ bytes: [UInt8]) -> String {
        var result = ""
        result.reserveCapacity(bytes.count)
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                result += "%"
                result.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                result.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0xF)]))
            }
        }
        return result
    }

    /// The bytes `%XX` sequences stand for; nil for a malformed escape.
    static func percentDecoded(_ text: some Collection<UInt8>) -> [UInt8]? {
        let utf8 = Array(text)
        // Most names have no escape: their bytes are the answer.
        guard utf8.contains(UInt8(ascii: "%")) else { return utf8 }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "%") {
                guard index + 2 < utf8.count, let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2])
                else { return nil }
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        return bytes
    }

    /// The value of a hexadecimal digit, either case.
    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
