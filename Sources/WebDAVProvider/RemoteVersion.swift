import FileProviderKit
import NIOHTTP1

/// How an item's version is spelled: the server's ETag where it gives one, else the modification
/// second and size — what a GET's headers and a PROPFIND's properties both tell, so a version
/// read from either is the same.
///
/// A weak ETag counts as its strong form: Apache marks an ETag weak (`W/"…"`) for the second after
/// a change and strong afterwards, and the same bytes must keep the same version.
enum RemoteVersion {
    /// The version of a resource with these validators.
    static func make(etag: String?, lastModified: Timestamp?, size: UInt64) -> ItemVersion {
        let text: String
        if var etag, !etag.isEmpty {
            if etag.hasPrefix("W/") { etag.removeFirst(2) }
            text = etag.utf8.count <= ItemVersion.maximumLength ? etag : "h:" + fingerprint(etag)
        } else {
            text = "m:\(lastModified?.seconds ?? 0):\(size)"
        }
        return ItemVersion(content: text, metadata: text)
    }

    /// The version of the bytes a GET answered with, from its headers.
    static func make(headers: HTTPHeaders, size: UInt64) -> ItemVersion {
        make(
            etag: headers.first(name: "ETag"),
            lastModified: headers.first(name: "Last-Modified").flatMap(HTTPDate.parse),
            size: size)
    }

    /// The ETag a version was made from, for `If-Match`; nil when it was made otherwise.
    static func etag(of version: ItemVersion) -> String? {
        let text = String(decoding: version.content, as: UTF8.self)
        return text.hasPrefix("\"") ? text : nil
    }

    /// A 64-bit FNV-1a digest in hex, for ETags too long to keep whole.
    private static func fingerprint(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
