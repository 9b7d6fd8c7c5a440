import FileProviderKit
import Foundation
import NIOHTTP1

/// Where an item is below the mounted prefix: its key without the prefix, a folder's ending in
/// `/` (the root is ""). This text is the item's identifier, so identifiers need no index; a
/// rename is a new identifier, as a rename is a new key on S3.
struct S3Path: Hashable, Sendable, CustomStringConvertible {
    /// The key below the prefix: `a/b.txt` for a file, `a/b/` for a folder, "" for the root.
    let relative: String

    static let root = S3Path(relative: "")

    init(relative: String) { self.relative = relative }

    init(_ identifier: ItemIdentifier) {
        relative = identifier == .rootContainer ? "" : identifier.rawValue
    }

    /// The item `name` (a folder when `isFolder`) in the folder `parent`.
    init(name: Filename, in parent: S3Path, isFolder: Bool) {
        relative = parent.relative + name.description + (isFolder ? "/" : "")
    }

    var isRoot: Bool { relative.isEmpty }
    var isFolder: Bool { isRoot || relative.hasSuffix("/") }
    var identifier: ItemIdentifier { isRoot ? .rootContainer : ItemIdentifier(relative) }
    var description: String { isRoot ? "/" : relative }

    /// The name: the last component.
    var name: Filename {
        let trimmed = isFolder ? relative.dropLast() : Substring(relative)
        return Filename(String(trimmed.split(separator: "/", omittingEmptySubsequences: false).last ?? ""))
    }

    /// The folder holding the item (the root for the root).
    var parent: S3Path {
        let trimmed = isFolder ? relative.dropLast() : Substring(relative)
        guard let slash = trimmed.lastIndex(of: "/") else { return .root }
        return S3Path(relative: String(trimmed[...slash]))
    }

    /// Folders have one version: the engine does not judge them by it (FileProvider's contract).
    static let folderVersion = ItemVersion(content: "folder", metadata: "folder")

    /// A folder's item. Its time is the epoch: a common prefix has none, and the same folder must
    /// look the same in every listing.
    var folderItem: Item {
        Item(
            identifier: identifier, parentIdentifier: parent.identifier, filename: isRoot ? "/" : name,
            kind: .directory, version: Self.folderVersion)
    }

    /// A file's item from what a listing or a `HEAD` says of it. The time is whole seconds, as a
    /// `HEAD`'s `Last-Modified` has it, so both agree.
    func fileItem(size: UInt64, etag: String, modified: Timestamp) -> Item {
        let version = S3Path.version(ofETag: etag)
        return Item(
            identifier: identifier, parentIdentifier: parent.identifier, filename: name, kind: .file, size: size,
            contentModificationDate: Timestamp(seconds: modified.seconds), version: version)
    }

    /// A file's item from the headers of a `HEAD` or `GET`.
    func fileItem(headers: HTTPHeaders) throws -> Item {
        let total = headers.first(name: "content-range").flatMap { $0.split(separator: "/").last }.flatMap {
            UInt64($0)
        }
        guard let size = total ?? headers.first(name: "content-length").flatMap(UInt64.init),
            let etag = headers.first(name: "etag"), !etag.isEmpty
        else {
            throw ProviderError.cannotSynchronize(reason: "the answer for \(self) has no size or no ETag")
        }
        let modified = headers.first(name: "last-modified").flatMap(S3Time.parseHTTPDate) ?? .epoch
        return fileItem(size: size, etag: etag, modified: modified)
    }

    /// An ETag without its quotes: RGW accepts `If-Match` only so, and listings quote it as XML.
    static func bareETag(_ etag: String) -> String {
        var text = Substring(etag)
        if text.hasPrefix("W/") { text = text.dropFirst(2) }
        return String(text.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
    }

    static func version(ofETag etag: String) -> ItemVersion {
        let bare = String(bareETag(etag).prefix(ItemVersion.maximumLength))
        return ItemVersion(content: bare, metadata: bare)
    }

    /// The ETag a version names.
    static func etag(of version: ItemVersion) -> String { String(decoding: version.content, as: UTF8.self) }

    /// The items of a flat listing of the whole prefix: every folder its keys imply (markers and
    /// the folders above each key), parents first, then the files. Below a part that cannot be a
    /// name on Linux (empty as in `a//b`, `.`, `..`, over 255 bytes) nothing is listed; that part
    /// itself is, for the engine to skip and log, as a folder's listing hands it over (its common
    /// prefix). A file whose name is also a folder's (`a` and `a/b`) is not shown: the folder wins,
    /// as it does in a folder's listing.
    static func tree(of objects: [S3ListPage.Object]) -> [Item] {
        var folders = Set<String>()
        var files: [S3ListPage.Object] = []
        for object in objects {
            let isMarker = object.relative.hasSuffix("/")
            var components = object.relative.split(separator: "/", omittingEmptySubsequences: false)
            if isMarker { components.removeLast() }
            var folder = ""
            for (index, component) in components.enumerated() {
                let isLast = index == components.count - 1
                if !isLast || isMarker {
                    folder += component + "/"
                    folders.insert(folder)
                } else {
                    files.append(object)
                }
                if !Filename(String(component)).isValid { break }
            }
        }
        let sortedFolders = folders.sorted {
            let (left, right) = ($0.count(of: "/"), $1.count(of: "/"))
            return left != right ? left < right : $0 < $1
        }
        return sortedFolders.map { S3Path(relative: $0).folderItem }
            + files.filter { !folders.contains($0.relative + "/") }.map {
                S3Path(relative: $0.relative).fileItem(size: $0.size, etag: $0.etag, modified: $0.modified)
            }
    }
}

extension String {
    fileprivate func count(of character: Character) -> Int { reduce(0) { $1 == character ? $0 + 1 : $0 } }
}
