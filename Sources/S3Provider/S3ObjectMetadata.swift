import FileProviderKit
import Foundation
import NIOHTTP1

/// What fpfs keeps of a file in its object's user metadata (`x-amz-meta-*`), in the convention
/// rclone and s3fs share (DECISIONS 251):
/// - `mtime`: the modification time as seconds since 1970 with up to nine decimals, as rclone
///   writes it (s3fs reads the whole seconds);
/// - `mode`: the `st_mode` in decimal, as s3fs writes it (file type bits included);
/// - `xattr`: the user's extended attributes as s3fs keeps them: a JSON object of full names
///   (`user.…`) to base64 values, percent-encoded.
///
/// S3 sends these only with a `GET` or `HEAD` of one object, never in listings; the provider reads
/// them from the answers it gets anyway and remembers them (`S3MetadataMemo`).
struct S3ObjectMetadata: Codable, Hashable, Sendable {
    var modified: Timestamp?
    var permissions: UInt16?
    var attributes: [String: [UInt8]]?

    /// The most user metadata S3 takes on one object: 2 KB of names and values (AWS's limit,
    /// which RGW does not enforce; fpfs keeps it everywhere).
    static let userMetadataLimit = 2048

    static let mtimeHeader = "x-amz-meta-mtime"
    static let modeHeader = "x-amz-meta-mode"
    static let attributesHeader = "x-amz-meta-xattr"

    init(modified: Timestamp? = nil, permissions: UInt16? = nil, attributes: [String: [UInt8]]? = nil) {
        self.modified = modified
        self.permissions = permissions
        self.attributes = attributes
    }

    /// What an item says: its time, its permissions, and its attributes when it carries them.
    init(of item: Item) {
        self.init(
            modified: item.contentModificationDate, permissions: item.permissions,
            attributes: item.extendedAttributes)
    }

    /// What an answer's headers say; a value that does not parse is ignored (another tool's).
    init(headers: HTTPHeaders) {
        modified = headers.first(name: Self.mtimeHeader).flatMap(Self.parseTime)
        permissions = headers.first(name: Self.modeHeader).flatMap { UInt32($0) }.flatMap {
            // A regular file's mode (or bare permission bits); s3fs's symlinks and others are files here.
            ($0 & 0o170000 == 0 || $0 & 0o170000 == 0o100000) ? UInt16($0 & 0o7777) : nil
        }
        attributes = headers.first(name: Self.attributesHeader).flatMap(Self.parseAttributes)
    }

    var isEmpty: Bool { modified == nil && permissions == nil && attributes == nil }

    /// The headers of a `PUT` or a metadata-replacing copy of the file at `path`.
    func headers(isFolder: Bool) -> [(String, String)] {
        var headers = [("Content-Type", isFolder ? "application/x-directory" : "application/octet-stream")]
        if let modified { headers.append((Self.mtimeHeader, Self.timeValue(modified))) }
        if let permissions {
            headers.append((Self.modeHeader, String(UInt32(isFolder ? 0o040000 : 0o100000) | UInt32(permissions))))
        }
        if let attributes, !attributes.isEmpty {
            headers.append((Self.attributesHeader, Self.attributesValue(attributes)))
        }
        return headers
    }

    /// The bytes S3 counts against its user-metadata limit: every `x-amz-meta-` name (without the
    /// prefix) and value.
    static func userMetadataSize(of headers: [(String, String)]) -> Int {
        headers.filter { $0.0.hasPrefix("x-amz-meta-") }.reduce(0) {
            $0 + $1.0.utf8.count - "x-amz-meta-".utf8.count + $1.1.utf8.count
        }
    }

    /// `item` with what this metadata says instead of what the listing did.
    func applied(to item: Item) -> Item {
        var item = item
        if let modified { item.contentModificationDate = modified }
        if let permissions { item.permissions = permissions }
        if let attributes { item.extendedAttributes = attributes }
        return item
    }

    // MARK: The values

    /// rclone's `mtime`: `1700000000.123456789`, trailing zeros of the fraction dropped; before
    /// 1970 the number is negative as a whole (`-0.5` is half a second before).
    static func timeValue(_ time: Timestamp) -> String {
        var seconds = time.seconds
        var nanoseconds = Int64(time.nanoseconds)
        let negative = seconds < 0 && nanoseconds > 0
        if negative {
            seconds += 1
            nanoseconds = 1_000_000_000 - nanoseconds
        }
        let sign = negative && seconds == 0 ? "-" : ""
        guard nanoseconds > 0 else { return String(seconds) }
        var fraction = String(nanoseconds).leftPadded(to: 9)
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(sign)\(seconds).\(fraction)"
    }

    /// `timeValue`'s form read back: optional sign, digits, optionally `.` and up to nine digits.
    static func parseTime(_ text: String) -> Timestamp? {
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        let negative = rest.hasPrefix("-")
        if negative { rest = rest.dropFirst() }
        let parts = rest.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.allSatisfy({ $0.isASCII && $0.isNumber }),
            let seconds = Int64(whole)
        else { return nil }
        var nanoseconds: Int64 = 0
        if parts.count == 2 {
            let digits = parts[1].prefix(9)
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int64(digits)
            else { return nil }
            nanoseconds = value * Int64(pow(10, Double(9 - digits.count)))
        }
        guard negative else { return Timestamp(seconds: seconds, nanoseconds: UInt32(nanoseconds)) }
        if nanoseconds == 0 { return Timestamp(seconds: -seconds) }
        return Timestamp(seconds: -seconds - 1, nanoseconds: UInt32(1_000_000_000 - nanoseconds))
    }

    /// s3fs's `xattr`: `{"user.a":"BASE64",…}`, percent-encoded.
    static func attributesValue(_ attributes: [String: [UInt8]]) -> String {
        let object = attributes.mapValues { Data($0).base64EncodedString() }
        let json = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: json, as: UTF8.self).addingPercentEncoding(withAllowedCharacters: unreserved)
            ?? "%7B%7D"
    }

    static func parseAttributes(_ text: String) -> [String: [UInt8]]? {
        guard let json = text.removingPercentEncoding,
            let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String]
        else { return nil }
        var attributes: [String: [UInt8]] = [:]
        for (name, value) in object {
            guard let bytes = Data(base64Encoded: value) else { return nil }
            attributes[name] = Array(bytes)
        }
        return attributes
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
