import FileProviderKit
import Foundation

/// One page of a `ListObjectsV2` answer (asked with `encoding-type=url`, so keys with control
/// characters survive XML), with keys made relative to the mounted prefix.
struct S3ListPage: Sendable {
    /// An object of the listing.
    struct Object: Sendable {
        /// The key below the mounted prefix.
        var relative: String
        var size: UInt64
        var etag: String
        var modified: Timestamp
    }

    var objects: [Object] = []
    /// Common prefixes (with `delimiter=/`), below the mounted prefix, each ending in `/`.
    var prefixes: [String] = []
    /// How many keys and prefixes the page holds.
    var keyCount = 0
    /// The continuation token of the next page; nil on the last.
    var nextToken: String?

    /// Reads an answer. A key or prefix outside the folder asked for fails the page: a server that
    /// sends one is broken or hostile, and nothing it lists can then be trusted.
    init(parsing body: [UInt8], keyPrefix: String, folder: S3Path) throws {
        let root = try S3XMLElement.parse(body)
        guard root.name == "ListBucketResult" else {
            throw ProviderError.cannotSynchronize(
                reason: "the listing's answer is a \(root.name), not a ListBucketResult")
        }
        let encoded = root.text(of: "EncodingType") == "url"
        let folderKey = keyPrefix + folder.relative
        func relative(_ text: String) throws -> String {
            guard let key = encoded ? Self.urlDecoded(text) : text, key.hasPrefix(folderKey) else {
                throw ProviderError.cannotSynchronize(
                    reason: "listing \(folder): the server listed a key outside the folder")
            }
            return String(key.dropFirst(keyPrefix.count))
        }
        for content in root.children("Contents") {
            guard let key = content.text(of: "Key"), let size = content.text(of: "Size").flatMap(UInt64.init),
                let etag = content.text(of: "ETag")
            else {
                throw ProviderError.cannotSynchronize(reason: "listing \(folder): an object without key, size or ETag")
            }
            let modified = content.text(of: "LastModified").flatMap(S3Time.parseISO8601) ?? .epoch
            objects.append(Object(relative: try relative(key), size: size, etag: etag, modified: modified))
        }
        for prefix in root.children("CommonPrefixes") {
            guard let text = prefix.text(of: "Prefix") else { continue }
            prefixes.append(try relative(text))
        }
        keyCount = objects.count + prefixes.count
        if root.text(of: "IsTruncated") == "true" {
            guard let token = root.text(of: "NextContinuationToken"), !token.isEmpty else {
                throw ProviderError.cannotSynchronize(reason: "listing \(folder): a truncated page without a token")
            }
            nextToken = token
        }
    }

    /// Percent-decoding of a key S3 sent URL-encoded (`+` is a space there); nil for one that is
    /// not UTF-8 once decoded.
    static func urlDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The items of a folder's page: its folders (prefixes) and files, without the folder's own
    /// marker. A file named like a folder of the same page (`a` and `a/`) is not shown: the folder
    /// wins. Children whose names cannot be names on Linux (empty, `..`, over 255 bytes) are
    /// handed over as they are: the engine skips and logs them (DECISIONS 181, 254).
    func items(in folder: S3Path) -> [Item] {
        let folders = prefixes.filter { $0.count > folder.relative.count }
        let folderSet = Set(folders)
        let files = objects.filter {
            $0.relative != folder.relative && !$0.relative.hasSuffix("/") && !folderSet.contains($0.relative + "/")
        }
        // A marker of a subfolder may come as an object where a server ignores the delimiter.
        let markers = objects.filter {
            $0.relative != folder.relative && $0.relative.hasSuffix("/") && !folderSet.contains($0.relative)
        }.map(\.relative)
        return (folders + markers).map { S3Path(relative: $0).folderItem }
            + files.map { S3Path(relative: $0.relative).fileItem(size: $0.size, etag: $0.etag, modified: $0.modified) }
    }
}
