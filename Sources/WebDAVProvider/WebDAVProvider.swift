import AsyncHTTPClient
import FileProviderKit
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// A WebDAV collection as a remote: Apache mod_dav, nginx, rclone, Nextcloud, ownCloud, a NAS.
///
/// Listings are `PROPFIND Depth: 1` answers parsed as they stream in; contents are `GET`s, with
/// `Range` for partial fetches and `If-Match` where a version must hold; writes are `PUT`, `MKCOL`,
/// `MOVE` and `DELETE` with preconditions, so a changed remote surfaces as a conflict, never as a
/// silent overwrite. Versions are ETags (see `RemoteVersion`).
///
/// What the mounted collection offers decides two things, learnt from one PROPFIND of it: where it
/// gives `oc:fileid` (Nextcloud, ownCloud), identifiers are those ids, kept in a `FileIDIndex`, so
/// a rename on the server is a change of the same item; elsewhere they are paths (see
/// `RemotePath`). Where it offers the `sync-collection` REPORT (RFC 6578), the working set's
/// changes are asked of the server; elsewhere walks of the tree are compared (see
/// `WebDAVWorkingSetEnumerator`).
public final class WebDAVProvider: FileProvider, PartialContentFetching, FeatureDescribing, Sendable {
    let client: WebDAVClient
    let history: WalkHistory
    let fileIDs: FileIDIndex
    let syncTokens: SyncTokenAnchors
    /// What the server offers, once asked.
    private let learned = Mutex<ServerFeatures?>(nil)
    /// The server refused to keep a dead property: extended attributes stay on this machine for
    /// the rest of the mount, without asking again.
    let refusesDeadProperties = Mutex(false)
    /// Whether the server answers a `PUT` with `If-None-Match: *` over a file that exists with 412,
    /// as RFC 9110 asks: then a creation needs no PROPFIND first. Nil until a creation found out.
    let takenNamesRefused = Mutex<Bool?>(nil)
    /// Where listings too long for one page wait for their next pages.
    let spools: ListingSpools

    /// WebDAV has no symlinks (DECISIONS 24), unless kept as marker files (`--links`), and no trash.
    public var features: ProviderFeatures { client.configuration.symlinksAsMarkerFiles ? [.symlinks] : [] }

    /// Names travel as UTF-8 in URLs and XML: a name that is not UTF-8 has no place there, and one
    /// with control characters cannot be listed in XML 1.0 (rclone turns them into other
    /// characters). With `--links`, a file name ending in `.rclonelink` would read back as a link.
    public func reasonItCannotHold(name: Filename, in parent: ItemIdentifier) -> String? {
        guard let text = name.utf8String else { return "a WebDAV server keeps only names that are UTF-8 text" }
        if text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "a WebDAV server cannot list names with control characters"
        }
        if client.configuration.symlinksAsMarkerFiles, LinkMarker.linkName(ofMarker: name) != nil {
            return "with --links, a file named *.rclonelink on the server is a symlink"
        }
        return nil
    }

    /// Checks the configuration and opens the connection pool; talks to no server yet. Throws
    /// `cannotSynchronize` for a bad URL or a state directory that cannot be used. Blocks briefly.

    public init(configuration: Configuration) throws {
        client = try WebDAVClient(configuration: configuration)
        let state = configuration.stateDirectory
        do {
            history = try WalkHistory(directory: state?.appending(path: "snapshots"))
            fileIDs = try FileIDIndex(directory: state?.appending(path: "fileids"))
            syncTokens = try SyncTokenAnchors(directory: state?.appending(path: "sync-tokens"))
            let spoolDirectory =
                state?.appending(path: "listings")
                ?? FileManager.default.temporaryDirectory.appending(path: "fpfs-webdav-\(UUID().uuidString)")
            try? FileManager.default.removeItem(at: spoolDirectory)
            try FileManager.default.createDirectory(at: spoolDirectory, withIntermediateDirectories: true)
            spools = ListingSpools(directory: spoolDirectory)
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
        try await current(identifier).item
    }

    public func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator {
        switch container {
        case .workingSet:
            return WebDAVWorkingSetEnumerator(provider: self)
        case .trashContainer:
            throw ProviderError.featureUnsupported
        default:
            return WebDAVDirectoryEnumerator(provider: self, folder: try path(of: container), identifier: container)
        }
    }

    public func invalidate() async {
        await client.shutdown()
        try? await fileIDs.flush()
        let spoolDirectory = spools.directory
        _ = try? await BlockingIO.run { try FileManager.default.removeItem(at: spoolDirectory) }
    }

    // MARK: What the server offers

    /// What the mounted collection offers.
    struct ServerFeatures: Sendable {
        /// Items are named by their `oc:fileid`: the collection has one.
        var usesFileIDs: Bool
        /// The collection lists `sync-collection` in its `supported-report-set`.
        var syncCollection: Bool
    }

    /// What the server offers, asked once by a PROPFIND of the root.
    func serverFeatures() async throws -> ServerFeatures {
        if let known = learned.withLock({ $0 }) { return known }
        let root = try await propfind(.root, body: Self.rootPropfindBody)
        let features = ServerFeatures(
            usesFileIDs: root.fileID.map(FileIDIndex.canName) ?? false, syncCollection: root.supportsSyncCollection)
        learned.withLock { $0 = features }
        return features
    }

    /// Walks from now on: the server listed `sync-collection` but refuses it.
    func stopUsingSyncCollection() {
        learned.withLock { $0?.syncCollection = false }
    }

    // MARK: Identifiers

    /// The path where `identifier` was last seen; `noSuchItem` for one this provider cannot place.
    func path(of identifier: ItemIdentifier) throws -> RemotePath {
        guard let path = RemotePath(identifier: identifier) ?? fileIDs.path(of: identifier) else {
            throw ProviderError.noSuchItem(identifier)
        }
        return path
    }

    /// The item `identifier` names, as the server has it now: a PROPFIND of where it was last
    /// seen. When that place is empty or holds another item, the item has moved where this
    /// provider cannot see: `noSuchItem`, and the engine lists again.
    func current(_ identifier: ItemIdentifier) async throws -> (item: Item, path: RemotePath) {
        let path = try path(of: identifier)
        do {
            let item = try await properties(of: path, parent: fileIDs.parent(of: identifier))
            if item.identifier == identifier { return (item, path) }
        } catch ProviderError.noSuchItem {}
        fileIDs.forget(identifier)
        throw ProviderError.noSuchItem(identifier)
    }

    /// The identifier and folder of what the server described at `path`, noted in the index when
    /// named by a fileid. `parent` is the folder's identifier when the caller knows it.
    func location(of entry: MultistatusParser.Response, at path: RemotePath, parent: ItemIdentifier?) async throws
        -> ItemLocation
    {
        guard let name = path.name else {
            return ItemLocation(identifier: .rootContainer, parent: .rootContainer, path: path)
        }
        let parent = if let parent { parent } else { try await folderIdentifier(path.parent) }
        guard try await serverFeatures().usesFileIDs, let fileID = entry.fileID, FileIDIndex.canName(fileID) else {
            return ItemLocation(identifier: path.identifier, parent: parent, path: path)
        }
        let identifier = ItemIdentifier(fileID)
        fileIDs.record(identifier, parent: parent, name: name)
        return ItemLocation(identifier: identifier, parent: parent, path: path)
    }

    /// The identifier of the folder at `path`: from the index, else from a PROPFIND of it.
    func folderIdentifier(_ path: RemotePath) async throws -> ItemIdentifier {
        guard !path.components.isEmpty, try await serverFeatures().usesFileIDs else { return path.identifier }
        if let known = fileIDs.identifier(at: path) { return known }
        return try await properties(of: path).identifier
    }

    // MARK: PROPFIND

    /// The properties of an item a PROPFIND or REPORT asks for: just what an `Item` needs.
    static let itemProperties = liveProperties + "<oc:fileid/>" + extendedAttributesProperty
    static let liveProperties =
        "<d:resourcetype/><d:getcontentlength/><d:getetag/><d:getlastmodified/><d:creationdate/>"
    static let extendedAttributesProperty =
        "<x:\(ExtendedAttributes.property) xmlns:x=\"\(ExtendedAttributes.namespace)\"/>"

    static let propfindBody = propfindBody(asking: itemProperties)
    /// The same without `oc:fileid`, for a server known to give none.
    static let propfindBodyWithoutFileIDs = propfindBody(asking: liveProperties + extendedAttributesProperty)

    /// What a PROPFIND of items asks for. Once the root's answer showed that the server gives no
    /// `oc:fileid`, it is no longer asked for: Apache answered it with a `404` propstat per item,
    /// bytes to send and to parse (DECISIONS 151).
    var itemPropfindBody: ByteBuffer {
        learned.withLock { $0?.usesFileIDs } == false ? Self.propfindBodyWithoutFileIDs : Self.propfindBody
    }

    /// The root's PROPFIND asks also what the server offers, and where it stands.
    static let rootPropfindBody = propfindBody(asking: itemProperties + "<d:supported-report-set/><d:sync-token/>")

    private static func propfindBody(asking properties: String) -> ByteBuffer {
        ByteBuffer(
            string: """
                <?xml version="1.0" encoding="utf-8"?>
                <d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>\(properties)</d:prop></d:propfind>
                """)
    }

    func propfindRequest(_ path: RemotePath, depth: Int, isCollection: Bool, body: ByteBuffer)
        -> WebDAVClient.Request
    {
        WebDAVClient.Request(
            method: .RAW(value: "PROPFIND"), path: path, isCollection: isCollection,
            headers: [("Depth", String(depth)), ("Content-Type", "application/xml; charset=utf-8")],
            bytes: body)
    }

    /// The item at `path` now, by `PROPFIND Depth: 0`; `parent` is its folder's identifier when
    /// the caller knows it.
    func properties(of path: RemotePath, parent: ItemIdentifier? = nil) async throws -> Item {
        let entry = try await propfind(path, body: itemPropfindBody)
        let item = try await item(described: entry, at: path, parent: parent)
        try await fileIDs.flush()
        return item
    }

    /// What `PROPFIND Depth: 0` of `path` says about it.
    func propfind(_ path: RemotePath, body: ByteBuffer) async throws -> MultistatusParser.Response {
        var request = propfindRequest(path, depth: 0, isCollection: path.components.isEmpty, body: body)
        var (response, answer) = try await client.sendCollecting(request)
        if [301, 302, 307, 308].contains(response.status.code), !request.isCollection {
            // A folder asked for without its final slash: servers with mod_dir-like rules redirect.
            request.isCollection = true
            (response, answer) = try await client.sendCollecting(request)
        }
        guard response.status.code == 207 else {
            throw WebDAVClient.error(for: response.status, path: path, method: request.method)
        }
        var parser = MultistatusParser()
        let responses: [MultistatusParser.Response]
        do {
            responses = try parser.feed(answer.readableBytesView)
            try parser.finish()
        } catch {
            throw ProviderError.cannotSynchronize(reason: "PROPFIND \(path): the server's answer is \(error)")
        }
        for entry in responses where client.path(ofHref: entry.href) == path {
            if let status = entry.status, status != 200 {
                throw WebDAVClient.error(
                    for: HTTPResponseStatus(statusCode: status), path: path, method: request.method)
            }
            return entry
        }
        throw ProviderError.cannotSynchronize(reason: "PROPFIND \(path): the answer does not describe \(path)")
    }

    /// Streams the children of `folder` (whose identifier is `identifier`) from `PROPFIND Depth: 1`
    /// into `each`, with their paths, as they arrive. An href outside the folder or one that cannot
    /// be a filename fails the listing: a server that sends one is broken or hostile, and nothing it
    /// lists can then be trusted. A folder that is now another item (its fileid differs) is
    /// `noSuchItem`.
    func listChildren(
        of folder: RemotePath, identifier: ItemIdentifier, each: (Item, RemotePath) async throws -> Void
    ) async throws {
        let request = propfindRequest(folder, depth: 1, isCollection: true, body: itemPropfindBody)
        let response = try await client.send(request)
        guard response.status.code == 207 else {
            await response.discardBody()
            throw WebDAVClient.error(for: response.status, path: folder, method: request.method)
        }
        var sawFolder = false
        var hrefs = ListingHrefs(client: client)
        try await readMultistatus(response, doing: "listing \(folder)") { entry in
            guard let path = hrefs.path(ofHref: entry.href), path.isWithin(folder),
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
                if try await location(of: entry, at: path, parent: fileIDs.parent(of: identifier)).identifier
                    != identifier
                {
                    throw ProviderError.noSuchItem(identifier)
                }
                sawFolder = true
                return
            }
            if let status = entry.status, status != 200 { return }
            try await each(try await item(described: entry, at: path, parent: identifier), path)
        }
        try await fileIDs.flush()
        guard sawFolder || folder.components.isEmpty else {
            throw ProviderError.cannotSynchronize(reason: "listing \(folder): the answer does not describe the folder")
        }
    }

    /// Parses a multistatus answer as it streams in, handing each response to `each`; returns the
    /// parser, which holds the answer's `sync-token`. `doing` names the request for error messages.
    @discardableResult
    func readMultistatus(
        _ response: HTTPClientResponse, doing: String, each: (MultistatusParser.Response) async throws -> Void
    ) async throws -> MultistatusParser {
        var parser = MultistatusParser()
        do {
            for try await buffer in response.body {
                for entry in try parser.feed(buffer.readableBytesView) { try await each(entry) }
            }
            try parser.finish()
        } catch let error as XMLPullParser.Malformed {
            throw ProviderError.cannotSynchronize(reason: "\(doing): the server's answer is \(error)")
        } catch let error as ProviderError {
            throw error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw ProviderError.serverUnreachable(reason: "\(doing) broke off: \(error)")
        }
        return parser
    }

    /// Every item below the root, folders before their contents: the walk `WalkHistory` compares.
    /// A folder gone by the time it is listed (moved or deleted since its parent was) is not in
    /// this walk, as if the walk had run a moment later; it failed the whole walk before, and every
    /// round while folders moved (DECISIONS 283).
    func walk() async throws -> [Item] {
        var items: [Item] = []
        var folders: [(RemotePath, ItemIdentifier)] = [(.root, .rootContainer)]
        while let (folder, identifier) = folders.popLast() {
            var listed: [Item] = []
            do {
                try await listChildren(of: folder, identifier: identifier) { item, path in
                    listed.append(item)
                    if item.kind == .directory { folders.append((path, item.identifier)) }
                }
            } catch ProviderError.noSuchItem where identifier != .rootContainer {
                items.removeAll { $0.identifier == identifier }
                folders.removeAll { $0.0.isWithin(folder) }
                continue
            }
            items += listed
        }
        return items
    }
}

/// Without file ids, an identifier is the item's path (`RemotePath`); a file id never starts with
/// `/` (`FileIDIndex.canName`), so it is never taken for one.
extension WebDAVProvider: PathIdentifying {
    public func identifierPrefix(below folder: ItemIdentifier) -> String? {
        guard folder != .rootContainer, RemotePath(identifier: folder) != nil else { return nil }
        return folder.rawValue + "/"
    }
}
