import AsyncHTTPClient
import FileProviderKit
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// The write half. WebDAV cannot compare-and-swap a whole change, so each call checks the remote
/// with a PROPFIND and then sends the change with the HTTP precondition that makes a race lose
/// safely: `If-None-Match: *` for a new file, `If-Match` for a replaced or deleted one,
/// `Overwrite: F` for a move. Servers that ignore a precondition are still covered by the check.
extension WebDAVProvider {
    public func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
        async throws -> Item
    {
        if template.kind == .symlink, !features.contains(.symlinks) { throw ProviderError.featureUnsupported }
        let path = try serverPath(of: template.filename, kind: template.kind, in: template.parentIdentifier)
        let isFolder = template.kind == .directory
        // A MKCOL never replaces what is there, nor does a PUT with `If-None-Match: *` on a server
        // that honours it; where that is not known, a PROPFIND first keeps a PUT from overwriting
        // a taken name (some servers ignore the precondition; the precondition covers a race).
        if !isFolder, takenNamesRefused.withLock({ $0 }) != true, let existing = try await existingItem(at: path) {
            throw ProviderError.filenameCollision(existing: existing.identifier)
        }
        let status: HTTPResponseStatus
        if isFolder {
            let request = WebDAVClient.Request(method: .MKCOL, path: path, isCollection: true, isIdempotent: false)
            status = try await client.sendCollecting(request).0.status
        } else {
            let body: Upload = template.kind == .file ? .file(contents) : .bytes(template.symlinkTarget ?? [])
            status = try await put(body, to: path, precondition: ("If-None-Match", "*"))
            if status == .preconditionFailed {
                takenNamesRefused.withLock { $0 = true }
            } else if status.madeIt, takenNamesRefused.withLock({ $0 }) == nil {
                try await learnWhetherTakenNamesAreRefused(resending: body, to: path)
            }
        }
        if !status.madeIt {
            // Servers answer a taken name differently (405, 409, 412, 400): what is there decides.
            if (400..<500).contains(status.code), let existing = try? await existingItem(at: path) {
                // A folder that exists is what was asked for; a file may hold anyone's bytes, so a
                // replayed file creation meets a collision rather than adopt them.
                if options.contains(.mayAlreadyExist), existing.kind == .directory, isFolder { return existing }
                throw ProviderError.filenameCollision(existing: existing.identifier)
            }
            switch status.code {
            case 412: throw ProviderError.filenameCollision(existing: nil)
            // A missing parent: 409 from Apache, 404 from rclone.
            case 404, 409: throw ProviderError.noSuchItem(template.parentIdentifier)
            default: throw WebDAVClient.error(for: status, path: path, method: isFolder ? .MKCOL : .PUT)
            }
        }
        if fields.contains(.extendedAttributes), let attributes = template.extendedAttributes, !attributes.isEmpty {
            try await storeExtendedAttributes(attributes, at: path, isCollection: template.kind == .directory)
        }
        let created = try await properties(of: path, parent: template.parentIdentifier)
        history.noteHandedOut([created.identifier])
        return created
    }

    public func modifyItem(
        _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?, options: ModifyItemOptions
    ) async throws -> Item {
        guard item.identifier != .rootContainer else { throw ProviderError.noSuchItem(item.identifier) }
        let (existing, source) = try await currentOrMoved(
            item, baseVersion: baseVersion, replayedMove: options.contains(.mayAlreadyExist)
                && !changedFields.isDisjoint(with: [.filename, .parentIdentifier]))
        // POSIX cannot change a link's target in place: the engine deletes and creates.
        if changedFields.contains(.symlinkTarget), existing.kind == .symlink { throw ProviderError.featureUnsupported }
        if changedFields.contains(.contents), existing.kind == .file {
            guard existing.version.content == baseVersion.content else {
                throw ProviderError.conflict(remote: existing)
            }
            let status = try await conditionally(on: existing, at: source) { precondition in
                try await put(.file(contents), to: source, precondition: precondition)
            }
            switch status.code {
            case 200, 201, 204: break
            default: throw WebDAVClient.error(for: status, path: source, method: .PUT)
            }
        }
        var destination = source
        if !changedFields.isDisjoint(with: [.filename, .parentIdentifier]) {
            let target = try serverPath(of: item.filename, kind: existing.kind, in: item.parentIdentifier)
            if target != source {
                try await move(source, to: target, isCollection: existing.kind == .directory)
                destination = target
            }
        }
        if changedFields.contains(.extendedAttributes), let attributes = item.extendedAttributes {
            try await storeExtendedAttributes(attributes, at: destination, isCollection: existing.kind == .directory)
        }
        let modified = try await properties(
            of: destination, parent: destination == source ? existing.parentIdentifier : item.parentIdentifier)
        history.noteHandedOut([modified.identifier])
        return modified
    }

    public func deleteItem(identifier: ItemIdentifier, baseVersion: ItemVersion?, options: DeleteItemOptions)
        async throws
    {
        guard identifier != .rootContainer else { throw ProviderError.deletionRejected }
        let (existing, path) = try await current(identifier)
        let isFolder = existing.kind == .directory
        if let baseVersion, !isFolder, existing.version.content != baseVersion.content {
            throw ProviderError.conflict(remote: existing)
        }
        if isFolder, !options.contains(.recursive) {
            var isEmpty = true
            try await listChildren(of: path, identifier: identifier) { _, _ in isEmpty = false }
            guard isEmpty else { throw ProviderError.directoryNotEmpty }
        }
        let status = try await conditionally(on: isFolder ? nil : existing, at: path) { precondition in
            let request = WebDAVClient.Request(
                method: .DELETE, path: path, isCollection: isFolder, headers: precondition.map { [$0] } ?? [],
                isIdempotent: false)
            return try await client.sendCollecting(request).0.status
        }
        switch status.code {
        case 200, 204:
            fileIDs.forget(identifier)
            try await fileIDs.flush()
        case 207: throw ProviderError.cannotSynchronize(reason: "DELETE \(path): the server kept some of its contents")
        default: throw WebDAVClient.error(for: status, path: path, method: .DELETE)
        }
    }

    /// Sends a change with `If-Match` on `existing`'s ETag; a 412 is a conflict — unless the item
    /// still has the same version, which means the server's ETag is weak for now (Apache, within a
    /// second of the last change) and `If-Match` cannot match it: then the PROPFIND just made
    /// stands in for the precondition and the change goes out without it.
    private func conditionally(
        on existing: Item?, at path: RemotePath, send: ((String, String)?) async throws -> HTTPResponseStatus
    ) async throws -> HTTPResponseStatus {
        guard let existing, let etag = RemoteVersion.etag(of: existing.version) else { return try await send(nil) }
        let status = try await send(("If-Match", etag))
        guard status == .preconditionFailed else { return status }
        let now = try await properties(of: path)
        guard now.version.content == existing.version.content else { throw ProviderError.conflict(remote: now) }
        return try await send(nil)
    }

    /// Learns once whether the server honours `If-None-Match: *` over a file that exists, by
    /// sending the file just created again with it: a server that honours it answers 412, and
    /// later creations go without a PROPFIND first; one that ignores it writes the same bytes
    /// again. Contents larger than one request chunk wait for a smaller creation to ask. Any
    /// other answer fails the creation, as a failed PUT would: the server may hold part of it.
    private func learnWhetherTakenNamesAreRefused(resending upload: Upload, to path: RemotePath) async throws {
        if case .file(let contents?) = upload {
            let size = try await BlockingIO.run { try Self.size(of: contents) }
            guard size <= Int64(FileChunks.size) else { return }
        }
        let status = try await put(upload, to: path, precondition: ("If-None-Match", "*"))
        if status == .preconditionFailed {
            takenNamesRefused.withLock { $0 = true }
        } else if status.madeIt {
            takenNamesRefused.withLock { $0 = false }
        } else {
            throw WebDAVClient.error(for: status, path: path, method: .PUT)
        }
    }

    /// Where an item named `name` of `kind` lives on the server in the folder `parent`: a link
    /// (`--links`) lives in its marker file.
    private func serverPath(of name: Filename, kind: ItemKind, in parent: ItemIdentifier) throws -> RemotePath {
        let stored = kind == .symlink ? LinkMarker.markerName(ofLink: name) : name
        guard let path = RemotePath.decode(Substring(try path(of: parent).appending(stored).encoded)) else {
            throw ProviderError.cannotSynchronize(reason: "'\(name)' cannot be a name on the server")
        }
        return path
    }

    /// The item and its place. For a replayed move whose item is gone from its old place: the
    /// item at the new place, when it is a folder or has the version the move began from — the
    /// server made the move before the daemon stopped, and its answer was lost. Taken for a
    /// deletion, the file was made again there and met itself as a conflict (the checker, seed
    /// 3012 on Apache; DECISIONS 281).
    private func currentOrMoved(_ item: Item, baseVersion: ItemVersion, replayedMove: Bool) async throws
        -> (item: Item, path: RemotePath)
    {
        do {
            return try await current(item.identifier)
        } catch ProviderError.noSuchItem(let missing) {
            let target = try serverPath(of: item.filename, kind: item.kind, in: item.parentIdentifier)
            guard replayedMove, let moved = try await existingItem(at: target), moved.kind == item.kind,
                moved.kind == .directory || moved.version.content == baseVersion.content
            else { throw ProviderError.noSuchItem(missing) }
            return (moved, target)
        }
    }

    /// The item at `path`, or nil when there is none.
    private func existingItem(at path: RemotePath) async throws -> Item? {
        do { return try await properties(of: path) } catch ProviderError.noSuchItem { return nil }
    }

    /// The size of the file at `url`, read off the cooperative threads by the caller.
    private static func size(of url: URL) throws -> Int64 {
        ((try FileManager.default.attributesOfItem(atPath: url.path))[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// What a `PUT` sends: a file's content (empty when nil), or a link's target.
    private enum Upload {
        case file(URL?)
        case bytes([UInt8])
    }

    /// Uploads `upload` to `path` with one `PUT`; returns the status.
    private func put(_ upload: Upload, to path: RemotePath, precondition: (String, String)?) async throws
        -> HTTPResponseStatus
    {
        let body: @Sendable () -> HTTPClientRequest.Body
        // Closed when the request is over, even if the server answered before reading the whole
        // body (a 413): each attempt's descriptor kept a deleted snapshot's disk space otherwise.
        let opened = OpenedFiles()
        defer { opened.closeAll() }
        switch upload {
        case .file(let contents?):
            switch try await BlockingIO.run({ try FileChunks.whole(contents) }) {
            case .bytes(let bytes):
                body = { .bytes(bytes) }
            case .larger(let size):
                let progress = UploadProgress.reporter(for: contents)
                body = {
                    .stream(
                        FileChunks(url: contents, length: UInt64(size), opened: opened, progress: progress),
                        length: .known(size))
                }
            }
        case .file(nil):
            body = { .bytes(ByteBuffer()) }
        case .bytes(let bytes):
            body = { .bytes(ByteBuffer(bytes: bytes)) }
        }
        var headers = [("Content-Type", "application/octet-stream")]
        if let precondition { headers.append(precondition) }
        let request = WebDAVClient.Request(method: .PUT, path: path, headers: headers, body: body, isIdempotent: false)
        let (response, _) = try await client.sendCollecting(request)
        return response.status
    }

    /// Keeps `attributes` as the item's dead property (see `ExtendedAttributes`). A server that
    /// refuses dead properties (rclone answers 403 for the property) is not asked again during this
    /// mount, and the attributes stay on this machine: not an error for the user.
    private func storeExtendedAttributes(_ attributes: [String: [UInt8]], at path: RemotePath, isCollection: Bool)
        async throws
    {
        guard !refusesDeadProperties.withLock({ $0 }) else { return }
        let body = ByteBuffer(string: ExtendedAttributes.proppatchBody(attributes))
        let request = WebDAVClient.Request(
            method: .RAW(value: "PROPPATCH"), path: path, isCollection: isCollection,
            headers: [("Content-Type", "application/xml; charset=utf-8")], bytes: body)
        let (response, answer) = try await client.sendCollecting(request)
        switch response.status.code {
        case 207:
            var parser = MultistatusParser()
            let status = try? parser.feed(answer.readableBytesView).first?.extendedAttributesStatus
            if status == 200 { return }
        case 200, 204:
            return
        case 403, 405, 409, 501:
            break
        default:
            throw WebDAVClient.error(for: response.status, path: path, method: request.method)
        }
        refusesDeadProperties.withLock { $0 = true }
    }

    /// `MOVE` with `Overwrite: F`: a taken target name is a collision, never replaced.
    private func move(_ source: RemotePath, to target: RemotePath, isCollection: Bool) async throws {
        let request = WebDAVClient.Request(
            method: .RAW(value: "MOVE"), path: source, isCollection: isCollection,
            headers: [("Destination", client.url(of: target, isCollection: isCollection)), ("Overwrite", "F")],
            isIdempotent: false)
        let (response, _) = try await client.sendCollecting(request)
        switch response.status.code {
        case 201, 204: return
        case 412: throw ProviderError.filenameCollision(existing: target.identifier)
        case 409: throw ProviderError.noSuchItem(target.parent.identifier)
        default:
            // mod_dav answers 400 ("extraneous path components"), not 412, when a folder's
            // Destination names a file: what is there decides, as for a creation.
            if response.status.code == 400, let existing = try? await existingItem(at: target) {
                throw ProviderError.filenameCollision(existing: existing.identifier)
            }
            throw WebDAVClient.error(for: response.status, path: source, method: request.method)
        }
    }
}

/// A file's bytes as request-body chunks, read off the cooperative threads.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let url: URL
    /// The bytes to send, as the request's `Content-Length` says: no more are read.
    let length: UInt64
    /// Where the opened file is registered, so the request's owner closes it in the end.
    let opened: OpenedFiles
    /// The engine's progress reporter for this file (`UploadProgress`), if any.
    let progress: (@Sendable (UInt64) -> Void)?

    /// The most each chunk holds.
    static let size = 1 << 20

    /// A file's bytes when they fit one chunk, or its size when they do not.
    enum Whole {
        case bytes(ByteBuffer)
        case larger(size: Int64)
    }

    /// Reads a file of at most one chunk whole, in one go: most uploads are small files, and
    /// streaming them cost a size, an open and a read on the I/O pool, each a hop, and the
    /// streamed body's own hops. Blocking: the caller runs it off the cooperative threads.
    static func whole(_ url: URL) throws -> Whole {
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let length = Int(status.st_size)
        guard length <= size else { return .larger(size: Int64(length)) }
        var buffer = ByteBufferAllocator().buffer(capacity: length)
        _ = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { space in
            var done = 0
            while done < length {
                let count = pread(descriptor, space.baseAddress! + done, length - done, off_t(done))
                if count > 0 {
                    done += count
                } else if count == 0 {
                    break
                } else if errno != EINTR {
                    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                }
            }
            return done
        }
        return .bytes(buffer)
    }

    func makeAsyncIterator() -> Iterator { Iterator(url: url, length: length, opened: opened, progress: progress) }

    struct Iterator: AsyncIteratorProtocol {
        let url: URL
        let length: UInt64
        let opened: OpenedFiles
        let progress: (@Sendable (UInt64) -> Void)?
        var handle: FileHandle?
        var offset: UInt64 = 0
        var finished = false

        init(url: URL, length: UInt64, opened: OpenedFiles, progress: (@Sendable (UInt64) -> Void)?) {
            self.url = url
            self.length = length
            self.opened = opened
            self.progress = progress
        }

        mutating func next() async throws -> ByteBuffer? {
            let wanted = Int(Swift.min(length - offset, UInt64(FileChunks.size)))
            if finished || wanted == 0 { return nil }
            if handle == nil {
                let (url, opened) = (url, opened)
                handle = try await BlockingIO.run { try opened.open(url) }
            }
            let (descriptor, offset) = (handle!.fileDescriptor, offset)
            // Read straight into the buffer the request sends: no Data in between.
            let chunk = try await BlockingIO.run { () -> ByteBuffer in
                var buffer = ByteBufferAllocator().buffer(capacity: wanted)
                _ = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { space in
                    while true {
                        let count = pread(descriptor, space.baseAddress, wanted, off_t(offset))
                        if count >= 0 { return count }
                        guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                    }
                }
                return buffer
            }
            if chunk.readableBytes == 0 {
                finished = true
                return nil
            }
            self.offset += UInt64(chunk.readableBytes)
            progress?(UInt64(chunk.readableBytes))
            return chunk
        }
    }
}

/// The files a request body opened, closed together once the request is over.
///
/// The body may still be asked for its first chunk after that: a server that refuses the request
/// from its headers alone (Apache's 413 for a `Content-Length` over its limit) answers before the
/// client has read a byte of it. An open that comes after the close is refused, or its descriptor
/// would keep a deleted snapshot (and its disk space) for as long as the client holds the body.
final class OpenedFiles: Sendable {
    private let state = Mutex<(handles: [FileHandle], closed: Bool)>(([], false))

    func open(_ url: URL) throws -> FileHandle {
        let handle = try FileHandle(forReadingFrom: url)
        let kept = state.withLock { state in
            if !state.closed { state.handles.append(handle) }
            return !state.closed
        }
        guard kept else {
            try? handle.close()
            throw CancellationError()
        }
        return handle
    }

    func closeAll() {
        let all = state.withLock { state in
            state.closed = true
            defer { state.handles = [] }
            return state.handles
        }
        for handle in all { try? handle.close() }
    }
}

extension HTTPResponseStatus {
    /// The answers of a `PUT` or `MKCOL` that did what it asked.
    fileprivate var madeIt: Bool { [200, 201, 204].contains(code) }
}
