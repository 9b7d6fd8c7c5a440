import AsyncHTTPClient
import FileProviderKit
import Foundation
import NIOCore
import NIOHTTP1

/// A WebDAV collection as a remote: Apache mod_dav, nginx, rclone, Nextcloud, ownCloud, a NAS.
///
/// Listings are `PROPFIND Depth: 1` answers parsed as they stream in; contents are `GET`s, with
/// `Range` for partial fetches and `If-Match` where a version must hold; writes are `PUT`, `MKCOL`,
/// `MOVE` and `DELETE` with preconditions, so a changed remote surfaces as a conflict, never as a
/// silent overwrite. Identifiers are paths (see `RemotePath`); versions are ETags (see
/// `RemoteVersion`); the working set compares walks of the tree (`WalkHistory`), as these servers
/// keep no history a client can ask for.
public final class WebDAVProvider: FileProvider, PartialContentFetching, FeatureDescribing, Sendable {
    let client: WebDAVClient
    let history: WalkHistory
    /// Where listings too long for one page wait for their next pages.
    let spoolDirectory: URL

    /// Checks the configuration and opens the connection pool; talks to no server yet. Throws
    /// `cannotSynchronize` for a bad URL or a state directory that cannot be used. Blocks briefly.
    /// WebDAV has no symlinks (DECISIONS 24).
    public var features: ProviderFeatures { [] }

    public init(configuration: Configuration) throws {
        client = try WebDAVClient(configuration: configuration)
        let state = configuration.stateDirectory
        do {
            history = try WalkHistory(directory: state?.appending(path: "snapshots"))
            spoolDirectory =
                state?.appending(path: "listings")
                ?? FileManager.default.temporaryDirectory.appending(path: "fpfs-webdav-\(UUID().uuidString)")
            try? FileManager.default.removeItem(at: spoolDirectory)
            try FileManager.default.createDirectory(at: spoolDirectory, withIntermediateDirectories: true)
        } catch let error as ProviderError {
            throw error
        } catch {
            throw ProviderError.cannotSynchronize(reason: "cannot use state directory \(state?.path ?? ""): \(error)")
        }
    }

    /// Asks the server for the mounted collection once: returns when it answers as a collection
    /// should, else throws the error a user should see (wrong password, no such path, no server).
    public func checkReachable() async throws {
        let root = try await item(for: .rootContainer)
        guard root.kind == .directory else {
            throw ProviderError.cannotSynchronize(reason: "\(client.configuration.url) is a file, not a collection")
        }
    }

    public func item(for identifier: ItemIdentifier) async throws -> Item {
        guard let path = RemotePath(identifier: identifier) else { throw ProviderError.noSuchItem(identifier) }
        return try await properties(of: path)
    }

    public func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator {
        switch container {
        case .workingSet:
            return WalkHistoryEnumerator(history: history) { [self] in try await walk() }
        case .trashContainer:
            throw ProviderError.featureUnsupported
        default:
            guard let path = RemotePath(identifier: container) else { throw ProviderError.noSuchItem(container) }
            return WebDAVDirectoryEnumerator(provider: self, folder: path)
        }
    }

    public func invalidate() async {
        await client.shutdown()
        let spool = spoolDirectory
        _ = try? await BlockingIO.run { try FileManager.default.removeItem(at: spool) }
    }

    // MARK: PROPFIND

    /// The properties a PROPFIND asks for: just what an `Item` needs.
    static let propfindBody = ByteBuffer(
        string: """
            <?xml version="1.0" encoding="utf-8"?>
            <d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><d:resourcetype/>\
            <d:getcontentlength/><d:getetag/><d:getlastmodified/><d:creationdate/><oc:fileid/></d:prop></d:propfind>
            """)

    func propfindRequest(_ path: RemotePath, depth: Int, isCollection: Bool) -> WebDAVClient.Request {
        WebDAVClient.Request(
            method: .RAW(value: "PROPFIND"), path: path, isCollection: isCollection,
            headers: [("Depth", String(depth)), ("Content-Type", "application/xml; charset=utf-8")],
            body: { .bytes(Self.propfindBody) })
    }

    /// The item at `path` now, by `PROPFIND Depth: 0`.
    func properties(of path: RemotePath) async throws -> Item {
        var request = propfindRequest(path, depth: 0, isCollection: path.components.isEmpty)
        var (response, body) = try await client.sendCollecting(request)
        if [301, 302, 307, 308].contains(response.status.code), !request.isCollection {
            // A folder asked for without its final slash: servers with mod_dir-like rules redirect.
            request.isCollection = true
            (response, body) = try await client.sendCollecting(request)
        }
        guard response.status.code == 207 else {
            throw WebDAVClient.error(for: response.status, path: path, method: request.method)
        }
        var parser = MultistatusParser()
        let responses: [MultistatusParser.Response]
        do {
            responses = try parser.feed(body.readableBytesView)
            try parser.finish()
        } catch {
            throw ProviderError.cannotSynchronize(reason: "PROPFIND \(path): the server's answer is \(error)")
        }
        for entry in responses where client.path(ofHref: entry.href) == path {
            if let status = entry.status, status != 200 {
                throw WebDAVClient.error(
                    for: HTTPResponseStatus(statusCode: status), path: path, method: request.method)
            }
            return Item(path: path, properties: entry)
        }
        throw ProviderError.cannotSynchronize(reason: "PROPFIND \(path): the answer does not describe \(path)")
    }

    /// Streams the children of `folder` from `PROPFIND Depth: 1` into `each`, as they arrive.
    /// An href outside the folder or one that cannot be a filename fails the listing: a server
    /// that sends one is broken or hostile, and nothing it lists can then be trusted.
    func listChildren(of folder: RemotePath, each: (Item) async throws -> Void) async throws {
        let request = propfindRequest(folder, depth: 1, isCollection: true)
        let response = try await client.send(request)
        guard response.status.code == 207 else {
            await WebDAVClient.discardBody(of: response)
            throw WebDAVClient.error(for: response.status, path: folder, method: request.method)
        }
        var parser = MultistatusParser()
        var sawFolder = false
        do {
            for try await buffer in response.body {
                for entry in try parser.feed(buffer.readableBytesView) {
                    guard let path = client.path(ofHref: entry.href), path.isWithin(folder),
                        path.components.count <= folder.components.count + 1
                    else {
                        throw ProviderError.cannotSynchronize(
                            reason:
                                "listing \(folder): the server listed '\(entry.href)', which is not a valid name in that folder"
                        )
                    }
                    if path == folder {
                        guard entry.isCollection else {
                            throw ProviderError.cannotSynchronize(reason: "\(folder) is a file, not a folder")
                        }
                        sawFolder = true
                        continue
                    }
                    if let status = entry.status, status != 200 { continue }
                    try await each(Item(path: path, properties: entry))
                }
            }
            try parser.finish()
        } catch let error as XMLPullParser.Malformed {
            throw ProviderError.cannotSynchronize(reason: "listing \(folder): the server's answer is \(error)")
        } catch let error as ProviderError {
            throw error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw ProviderError.serverUnreachable(reason: "listing \(folder) broke off: \(error)")
        }
        guard sawFolder || folder.components.isEmpty else {
            throw ProviderError.cannotSynchronize(reason: "listing \(folder): the answer does not describe the folder")
        }
    }

    /// Every item below the root, folders before their contents: the walk `WalkHistory` compares.
    func walk() async throws -> [Item] {
        var items: [Item] = []
        var folders: [RemotePath] = [.root]
        while let folder = folders.popLast() {
            try await listChildren(of: folder) { item in
                items.append(item)
                if item.kind == .directory, let path = RemotePath(identifier: item.identifier) {
                    folders.append(path)
                }
            }
        }
        return items
    }
}
