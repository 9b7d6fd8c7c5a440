import FileProviderKit

/// Symlinks in a bucket, in rclone's convention (`--links`, `LinkMarker`): the link `NAME` is the
/// object `NAME.rclonelink` holding the target. Its identifier is the marker's key, as any
/// object's; the engine sees a symlink named `NAME`. The target is fetched once per ETag (a `GET`
/// of at most 4 KiB), only for objects a listing shows with a marker's name and size.
extension S3Provider {
    /// The target of a marker object, for the ETag it was read at.
    struct LinkTarget: Sendable {
        let etag: [UInt8]
        let target: [UInt8]
    }

    /// `items` with each marker object as its symlink.
    func linked(_ items: [Item]) async throws -> [Item] {
        guard client.configuration.symlinksAsMarkerFiles else { return items }
        var linked: [Item] = []
        linked.reserveCapacity(items.count)
        for item in items { linked.append(try await self.linked(item)) }
        return linked
    }

    /// With `--links`, the symlink a marker object stands for; any other item as it is. A marker
    /// changed or gone since it was listed stays a file until the next listing.
    func linked(_ item: Item) async throws -> Item {
        guard client.configuration.symlinksAsMarkerFiles, LinkMarker.mayBeMarker(item) else { return item }
        let path = S3Path(item.identifier)
        if let known = linkTargets.withLock({ $0[path] }), known.etag == item.version.content {
            return LinkMarker.link(item, target: known.target) ?? item
        }
        let answer = try await client.sendCollecting(
            .init(method: .GET, key: key(of: path), headers: [("If-Match", S3Path.etag(of: item.version))]),
            limit: Int(LinkMarker.largestTarget))
        switch answer.status.code {
        case 200: return link(item, target: answer.body) ?? item
        case 404, 412: return item
        default: throw client.error(for: answer, doing: "GET \(path)", identifier: item.identifier)
        }
    }

    /// The symlink the marker object `item` holding `target` stands for, its target remembered.
    func link(_ item: Item, target: [UInt8]) -> Item? {
        guard let link = LinkMarker.link(item, target: target) else { return nil }
        linkTargets.withLock { $0[S3Path(item.identifier)] = LinkTarget(etag: item.version.content, target: target) }
        return link
    }
}
