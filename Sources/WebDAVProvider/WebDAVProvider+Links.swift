import AsyncHTTPClient
import FileProviderKit
import Foundation

/// Symlinks on a server that has none, as rclone keeps them (`--links`): the link `NAME` is the
/// file `NAME.rclonelink` whose content is the target. Such files on the server show as symlinks,
/// links made in the mount are stored as such files, and `rclone copy --links` restores them on a
/// disk. Without `--links` they are ordinary files.
extension WebDAVProvider {
    static let linkSuffix = Array(".rclonelink".utf8)
    /// A bigger marker is no link (PATH_MAX is 4096): it stays a file.
    static let largestLinkTarget: UInt64 = 4096

    /// The item a PROPFIND or REPORT response describes at `path`; `parent` is its folder's
    /// identifier when the caller knows it. With `--links` a marker file becomes its symlink, its
    /// target fetched with a GET.
    func item(described entry: MultistatusParser.Response, at path: RemotePath, parent: ItemIdentifier?) async throws
        -> Item
    {
        var item = Item(try await location(of: entry, at: path, parent: parent), properties: entry)
        guard client.configuration.symlinksAsMarkerFiles, item.kind == .file,
            (1...Self.largestLinkTarget).contains(item.size), let name = Self.linkName(ofMarker: item.filename)
        else { return item }
        let request = WebDAVClient.Request(method: .GET, path: path)
        let (response, body) = try await client.sendCollecting(request, limit: Int(Self.largestLinkTarget))
        guard response.status.code == 200 else {
            throw WebDAVClient.error(for: response.status, path: path, method: .GET)
        }
        let target = Array(body.readableBytesView)
        guard !target.isEmpty, !target.contains(0) else { return item }
        item.kind = .symlink
        item.filename = name
        item.symlinkTarget = target
        item.size = UInt64(target.count)
        return item
    }

    /// The file name that holds the symlink `name`.
    static func markerName(ofLink name: Filename) -> Filename {
        Filename(bytes: name.bytes + linkSuffix)
    }

    /// The symlink a marker file named `name` stands for, or nil when `name` names no marker.
    static func linkName(ofMarker name: Filename) -> Filename? {
        guard name.bytes.count > linkSuffix.count, name.bytes.suffix(linkSuffix.count).elementsEqual(linkSuffix)
        else { return nil }
        return Filename(bytes: Array(name.bytes.dropLast(linkSuffix.count)))
    }
}
