import AsyncHTTPClient
import FileProviderKit
import Foundation

/// Symlinks on a server that has none, in rclone's convention (`--links`, `LinkMarker`): a marker
/// file the server lists becomes its symlink, its target fetched with a GET.
extension WebDAVProvider {
    /// The item a PROPFIND or REPORT response describes at `path`; `parent` is its folder's
    /// identifier when the caller knows it. With `--links` a marker file becomes its symlink, its
    /// target fetched with a GET.
    func item(described entry: MultistatusParser.Response, at path: RemotePath, parent: ItemIdentifier?) async throws
        -> Item
    {
        let item = Item(try await location(of: entry, at: path, parent: parent), properties: entry)
        guard client.configuration.symlinksAsMarkerFiles, LinkMarker.mayBeMarker(item) else { return item }
        let request = WebDAVClient.Request(method: .GET, path: path)
        let (response, body) = try await client.sendCollecting(request, limit: Int(LinkMarker.largestTarget))
        guard response.status.code == 200 else {
            throw WebDAVClient.error(for: response.status, path: path, method: .GET)
        }
        return LinkMarker.link(item, target: Array(body.readableBytesView)) ?? item
    }
}
