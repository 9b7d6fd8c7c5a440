import FileProviderKit
import Foundation
import NIOHTTP1
import Synchronization

/// A bucket (or a "folder" of it) of an S3-compatible object store as a remote: AWS S3, Ceph's
/// RADOS Gateway, MinIO, Garage, R2.
///
/// Identifiers are keys below the mounted prefix, a folder's with its final `/` (see `S3Path`), so
/// an identifier names its key without any index. Listings are `ListObjectsV2` with `delimiter=/`,
/// one page per continuation token; folders are common prefixes and `dir/` marker objects, which
/// `mkdir` writes so that empty folders persist. Versions are ETags. Reads are `GET`s with `Range`
/// and `If-Match`; writes use the store's own compare-and-swap (`If-Match`, `If-None-Match: *`),
/// so a changed object surfaces as a conflict, never as a silent overwrite. The working set's
/// changes come from comparing flat listings of the whole prefix (`WalkHistory`): one request per
/// 1000 keys, none per folder.
public final class S3Provider: FileProvider, PartialContentFetching, FeatureDescribing, Sendable {
    let client: S3Client
    let history: WalkHistory
    /// The user metadata the last `GET`/`HEAD` of each object found, shown in listings too.
    let metadata: S3MetadataMemo
    /// The keys of the mount: "" or `PREFIX/`.
    let keyPrefix: String
    /// Whether the server honours `If-None-Match`/`If-Match` on a `PUT`: nil until the first small
    /// creation shows it (`learnWhetherWritesAreConditional`). Until it is known to, an edit checks
    /// its base version by a `HEAD` first (older RGW and some gateways ignore the preconditions).
    let writesAreConditional = Mutex<Bool?>(nil)
    /// Whether what a kill -9 left (multipart uploads, folder moves) was cleaned up: once per mount.
    private let leftoversCleaned = Mutex(false)
    /// With `--links`, the targets of the marker objects read so far, by path, with their ETag: a
    /// change round lists every marker, and only a new or changed one is fetched.
    let linkTargets = Mutex<[S3Path: LinkTarget]>([:])

    /// Symlinks with `--links`, as rclone keeps them (`LinkMarker`); buckets have no trash.
    public var features: ProviderFeatures { client.configuration.symlinksAsMarkerFiles ? [.symlinks] : [] }

    /// S3 keys are UTF-8 text of at most 1024 bytes. With `--links`, a file named *.rclonelink
    /// would read back as a link.
    public func reasonItCannotHold(name: Filename, in parent: ItemIdentifier) -> String? {
        guard name.utf8String != nil else { return "an S3 key is UTF-8 text" }
        if client.configuration.symlinksAsMarkerFiles, LinkMarker.linkName(ofMarker: name) != nil {
            return "with --links, an object named *.rclonelink is a symlink"
        }
        let parentKey = keyPrefix + (parent == .rootContainer ? "" : parent.rawValue)
        if parentKey.utf8.count + name.bytes.count + 1 > 1024 { return "an S3 key holds at most 1024 bytes" }
        return nil
    }

    /// At most 2 KB of user metadata on an object (`S3ObjectMetadata.userMetadataLimit`), counted
    /// with the longest time and mode the object's metadata may also hold.
    public func reasonItCannotHold(attributes: [String: [UInt8]]) -> String? {
        let longest = S3ObjectMetadata(
            modified: Timestamp(seconds: -9_999_999_999, nanoseconds: 999_999_999), permissions: 0o7777,
            attributes: attributes)
        let size = S3ObjectMetadata.userMetadataSize(of: longest.headers(isFolder: false))
        guard size > S3ObjectMetadata.userMetadataLimit else { return nil }
        return "S3 holds at most 2 KB of user metadata per object; with these attributes it would be \(size) bytes"
    }

    /// Checks the configuration and opens the connection pool; talks to no server yet. Plain
    /// `http` is allowed to this machine, or anywhere with `allowPlainHTTP` (an endpoint the user
    /// gave explicitly). Blocks briefly.
    public init(configuration: Configuration, allowPlainHTTP: Bool = false) throws {
        client = try S3Client(configuration: configuration, allowPlainHTTP: allowPlainHTTP)
        keyPrefix = configuration.keyPrefix
        metadata = S3MetadataMemo(stateDirectory: configuration.stateDirectory)
        do {
            history = try WalkHistory(directory: configuration.stateDirectory?.appending(path: "snapshots"))
        } catch {
            throw ProviderError.cannotSynchronize(
                reason: "cannot use state directory \(configuration.stateDirectory?.path ?? ""): \(error)")
        }
    }

    /// Lists the mount's prefix once: returns when the bucket answers, else throws the error a user
    /// should see (wrong keys, no such bucket, another region, no server).
    public func checkReachable() async throws {
        _ = try await listPage(of: S3Path.root, token: nil, maximumKeys: 1, flat: false)
    }

    public func item(for identifier: ItemIdentifier) async throws -> Item {
        let path = S3Path(identifier)
        if path.isRoot {
            // Asked of the bucket, though the answer is known: the engine's first question at mount
            // is this one, and wrong keys or a missing bucket must fail the mount there.
            try await checkReachable()
            if leftoversCleaned.withLock({ done in
                defer { done = true }; return !done
            }) {
                await S3MultipartUpload(provider: self).abortAbandoned()
                await S3FolderMoves(provider: self).finishInterrupted()
            }
            return path.folderItem
        }
        if path.isFolder {
            guard try await folderExists(path) else { throw ProviderError.noSuchItem(identifier) }
            return path.folderItem
        }
        return try await linked(try await head(path))
    }

    public func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator {
        switch container {
        case .workingSet:
            return WalkHistoryEnumerator(history: history) { [self] in try await walk() }
        case .trashContainer:
            throw ProviderError.featureUnsupported
        default:
            let path = S3Path(container)
            guard path.isFolder else { throw ProviderError.noSuchItem(container) }
            return S3FolderEnumerator(provider: self, folder: path)
        }
    }

    public func invalidate() async {
        await client.shutdown()
    }

    // MARK: Requests

    /// The file at `path` as a `HEAD` finds it, its user metadata remembered.
    func head(_ path: S3Path) async throws -> Item { try await headAnswer(path).item }

    /// What a `HEAD` of the file at `path` finds: its item, its user metadata remembered, and the
    /// answer's headers, for what an item does not say.
    func headAnswer(_ path: S3Path) async throws -> (item: Item, headers: HTTPHeaders) {
        let answer = try await client.sendCollecting(.init(method: .HEAD, key: key(of: path)))
        guard answer.status.code == 200 else {
            throw client.error(for: answer, doing: "HEAD \(path)", identifier: path.identifier)
        }
        let item = await metadata.learn(
            S3ObjectMetadata(headers: answer.headers), of: try path.fileItem(headers: answer.headers))
        return (item, answer.headers)
    }

    /// Whether some key starts with the folder's prefix (its marker or anything in it).
    func folderExists(_ path: S3Path) async throws -> Bool {
        let page = try await listPage(of: path, token: nil, maximumKeys: 1, flat: true)
        return page.keyCount > 0
    }

    /// The full key of a path.
    func key(of path: S3Path) -> String { keyPrefix + path.relative }

    /// One page of `ListObjectsV2` below `folder`: with `flat`, every key under it, else its
    /// direct children (`delimiter=/`).
    func listPage(of folder: S3Path, token: String?, maximumKeys: Int, flat: Bool) async throws -> S3ListPage {
        var query = [
            ("list-type", "2"), ("prefix", key(of: folder)), ("max-keys", String(maximumKeys)),
            ("encoding-type", "url"),
        ]
        if !flat { query.append(("delimiter", "/")) }
        if let token { query.append(("continuation-token", token)) }
        let answer = try await client.sendCollecting(.init(method: .GET, key: nil, query: query))
        guard answer.status.code == 200 else {
            if token != nil, answer.status.code == 400 { throw ProviderError.pageExpired }
            throw client.error(for: answer, doing: "listing \(folder)", identifier: folder.identifier)
        }
        do {
            return try S3ListPage(parsing: answer.body, keyPrefix: keyPrefix, folder: folder)
        } catch let error as ProviderError {
            throw error
        } catch {
            throw ProviderError.cannotSynchronize(reason: "listing \(folder): the server's answer is \(error)")
        }
    }

    /// Every item below the root, folders before their contents, from a flat listing of the
    /// prefix: the walk `WalkHistory` compares.
    func walk() async throws -> [Item] {
        var keys: [S3ListPage.Object] = []
        var token: String?
        repeat {
            let page = try await listPage(of: .root, token: token, maximumKeys: 1000, flat: true)
            keys += page.objects
            token = page.nextToken
        } while token != nil
        return try await linked(S3Path.tree(of: keys).map(metadata.applied))
    }
}

/// An identifier is the key below the mounted prefix (`S3Path`); a folder's ends in `/`.
extension S3Provider: PathIdentifying {
    public func identifierPrefix(below folder: ItemIdentifier) -> String? {
        let path = S3Path(folder)
        return path.isFolder && !path.isRoot ? path.relative : nil
    }
}
