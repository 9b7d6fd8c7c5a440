import FileProviderKit
import NIOHTTP1

/// Where an item is and what it is called: what an `Item` takes besides the server's properties.
struct ItemLocation: Sendable {
    var identifier: ItemIdentifier
    var parent: ItemIdentifier
    var path: RemotePath
}

extension Item {
    /// The item a PROPFIND or REPORT response describes.
    init(_ location: ItemLocation, properties: MultistatusParser.Response) {
        let modified = properties.lastModified.flatMap(HTTPDate.parse)
        let size = properties.isCollection ? 0 : properties.contentLength ?? 0
        self.init(
            location, isCollection: properties.isCollection, size: size, modified: modified,
            created: properties.creationDate.flatMap(HTTPDate.parseISO8601),
            version: RemoteVersion.make(etag: properties.etag, lastModified: modified, size: size))
        extendedAttributes = properties.extendedAttributes
    }

    /// The file a GET answered with: its size and version from the headers, as of the bytes sent.
    init(_ location: ItemLocation, size: UInt64, headers: HTTPHeaders) {
        self.init(
            location, isCollection: false, size: size,
            modified: headers.first(name: "Last-Modified").flatMap(HTTPDate.parse),
            created: nil, version: RemoteVersion.make(headers: headers, size: size))
    }

    private init(
        _ location: ItemLocation, isCollection: Bool, size: UInt64, modified: Timestamp?, created: Timestamp?,
        version: ItemVersion
    ) {
        self.init(
            identifier: location.identifier,
            parentIdentifier: location.parent,
            filename: location.path.name ?? Filename(bytes: []),
            kind: isCollection ? .directory : .file,
            size: size,
            creationDate: created,
            contentModificationDate: modified ?? .epoch,
            version: version)
    }
}
