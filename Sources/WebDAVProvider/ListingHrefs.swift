#if canImport(Glibc)
    import Glibc
#endif

/// Turns the hrefs of one listing into paths, decoding the folder part they share once.
///
/// A folder's PROPFIND answer names every child by its full href: decoding and checking the same
/// folder components again for each of 100 000 children cost more than the child's own name did.
/// An href whose folder part (up to its last `/`) is the one before's reuses that folder's path;
/// any other goes through `WebDAVClient.path(ofHref:)` whole, which stays the one definition.
struct ListingHrefs {
    private let client: WebDAVClient
    /// The folder part of the last href read, and its path (nil when it is no path of ours).
    private var folderHref: [UInt8] = []
    private var folder: RemotePath?

    init(client: WebDAVClient) {
        self.client = client
    }

    /// What `client.path(ofHref: href)` answers.
    mutating func path(ofHref href: String) -> RemotePath? {
        var href = href
        guard let (cut, end) = href.withUTF8(Self.lastComponent) else { return client.path(ofHref: href) }
        let sameFolder = href.withUTF8 { bytes in
            folderHref.count == cut + 1 && memcmp(bytes.baseAddress!, folderHref, cut + 1) == 0
        }
        if !sameFolder {
            folderHref = href.withUTF8 { Array($0[...cut]) }
            folder = client.path(ofHref: String(decoding: folderHref, as: UTF8.self))
        }
        // The mounted collection itself, or an href outside it: the client decides.
        guard let folder else { return client.path(ofHref: href) }
        guard let bytes = href.withUTF8({ RemotePath.percentDecoded($0[(cut + 1)..<end]) }),
            let name = RemotePath.component(bytes)
        else { return nil }
        return folder.appending(name)
    }

    /// Where the last component of an absolute path starts (after the `/` at `cut`) and ends
    /// (before a trailing `/`); nil for what the client reads whole: a full URL, a query or a
    /// fragment, which are rare.
    private static func lastComponent(of href: UnsafeBufferPointer<UInt8>) -> (cut: Int, end: Int)? {
        guard let start = href.baseAddress, href.first == UInt8(ascii: "/"),
            memchr(start, Int32(UInt8(ascii: "?")), href.count) == nil,
            memchr(start, Int32(UInt8(ascii: "#")), href.count) == nil
        else { return nil }
        let end = href.last == UInt8(ascii: "/") ? href.count - 1 : href.count
        guard let cut = href[..<end].lastIndex(of: UInt8(ascii: "/")) else { return nil }
        return (cut, end)
    }
}
