import FileProviderKit
import NIOHTTP1

extension Item {
    /// The item a PROPFIND response describes, at `path`.
    init(path: RemotePath, properties: MultistatusParser.Response) {
        let modified = properties.lastModified.flatMap(HTTPDate.parse)
        let size = properties.isCollection ? 0 : properties.contentLength ?? 0
        self.init(
            path: path, isCollection: properties.isCollection, size: size, modified: modified,
            created: properties.creationDate.flatMap(HTTPDate.parseISO8601),
            version: RemoteVersion.make(etag: properties.etag, lastModified: modified, size: size))
    }

    /// The file a GET answered with: its size and version from the headers, as of the bytes sent.
    init(path: RemotePath, size: UInt64, headers: HTTPHeaders) {
        let modified = headers.first(name: "Last-Modified").flatMap(HTTPDate.parse)
        self.init(
            path: path, isCollection: false, size: size, modified: modified, created: nil,
            version: RemoteVersion.make(etag: headers.first(name: "ETag"), lastModified: modified, size: size))
    }

    private init(
        path: RemotePath, isCollection: Bool, size: UInt64, modified: Timestamp?, created: Timestamp?,
        version: ItemVersion
    ) {
        self.init(
            identifier: path.identifier,
            parentIdentifier: path.parent.identifier,
            filename: path.name ?? Filename(bytes: []),
            kind: isCollection ? .directory : .file,
            size: size,
            creationDate: created,
            contentModificationDate: modified ?? .epoch,
            version: version)
    }
}
