import AsyncHTTPClient
import FileProviderKit
import Foundation
import NIOCore
import NIOHTTP1

/// The write half. WebDAV cannot compare-and-swap a whole change, so each call checks the remote
/// with a PROPFIND and then sends the change with the HTTP precondition that makes a race lose
/// safely: `If-None-Match: *` for a new file, `If-Match` for a replaced or deleted one,
/// `Overwrite: F` for a move. Servers that ignore a precondition are still covered by the check.
extension WebDAVProvider {
    public func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
        async throws -> Item
    {
        let parent = try path(of: template.parentIdentifier)
        guard let path = RemotePath.decode(Substring(parent.appending(template.filename).encoded)) else {
            throw ProviderError.cannotSynchronize(reason: "'\(template.filename)' cannot be a name on the server")
        }
        if template.kind == .symlink { throw ProviderError.featureUnsupported }
        // Asked first because servers answer a taken name differently (405, 400, 412, or a silent
        // overwrite when a precondition is ignored); the request's own precondition covers a race.
        if let existing = try await existingItem(at: path) {
            // A folder that exists is what was asked for; a file may hold anyone's bytes, so a
            // replayed file creation meets a collision rather than adopt them.
            if options.contains(.mayAlreadyExist), existing.kind == .directory, template.kind == .directory {
                return existing
            }
            throw ProviderError.filenameCollision(existing: existing.identifier)
        }
        switch template.kind {
        case .symlink:
            throw ProviderError.featureUnsupported
        case .directory:
            let request = WebDAVClient.Request(method: .MKCOL, path: path, isCollection: true, isIdempotent: false)
            let (response, _) = try await client.sendCollecting(request)
            switch response.status.code {
            case 200, 201:
                break
            case 405:
                let existing = try await properties(of: path)
                if options.contains(.mayAlreadyExist), existing.kind == .directory { return existing }
                throw ProviderError.filenameCollision(existing: existing.identifier)
            case 409:
                throw ProviderError.noSuchItem(template.parentIdentifier)
            default:
                throw WebDAVClient.error(for: response.status, path: path, method: request.method)
            }
        case .file:
            let status = try await put(contents, to: path, precondition: ("If-None-Match", "*"))
            switch status.code {
            case 200, 201, 204: break
            case 412: throw ProviderError.filenameCollision(existing: try? await existingItem(at: path)?.identifier)
            // A missing parent: 409 from Apache, 404 from rclone.
            case 404, 409: throw ProviderError.noSuchItem(template.parentIdentifier)
            default: throw WebDAVClient.error(for: status, path: path, method: .PUT)
            }
        }
        let created = try await properties(of: path, parent: template.parentIdentifier)
        history.noteHandedOut([created.identifier])
        return created
    }

    public func modifyItem(
        _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?, options: ModifyItemOptions
    ) async throws -> Item {
        guard item.identifier != .rootContainer else { throw ProviderError.noSuchItem(item.identifier) }
        let (existing, source) = try await current(item.identifier)
        if changedFields.contains(.contents), existing.kind == .file {
            guard existing.version.content == baseVersion.content else {
                throw ProviderError.conflict(remote: existing)
            }
            let status = try await conditionally(on: existing, at: source) { precondition in
                try await put(contents, to: source, precondition: precondition)
            }
            switch status.code {
            case 200, 201, 204: break
            default: throw WebDAVClient.error(for: status, path: source, method: .PUT)
            }
        }
        var destination = source
        if !changedFields.isDisjoint(with: [.filename, .parentIdentifier]) {
            let parent = try path(of: item.parentIdentifier)
            guard let target = RemotePath.decode(Substring(parent.appending(item.filename).encoded)) else {
                throw ProviderError.cannotSynchronize(reason: "'\(item.filename)' cannot be a name on the server")
            }
            if target != source {
                try await move(source, to: target, isCollection: existing.kind == .directory)
                destination = target
            }
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

    /// The item at `path`, or nil when there is none.
    private func existingItem(at path: RemotePath) async throws -> Item? {
        do { return try await properties(of: path) } catch ProviderError.noSuchItem { return nil }
    }

    /// Uploads `contents` (empty when nil) to `path` with one `PUT`; returns the status.
    private func put(_ contents: URL?, to path: RemotePath, precondition: (String, String)?) async throws
        -> HTTPResponseStatus
    {
        let size: Int64
        if let contents {
            size = try await BlockingIO.run {
                ((try FileManager.default.attributesOfItem(atPath: contents.path))[.size] as? NSNumber)?.int64Value ?? 0
            }
        } else {
            size = 0
        }
        var headers = [("Content-Type", "application/octet-stream")]
        if let precondition { headers.append(precondition) }
        let request = WebDAVClient.Request(
            method: .PUT, path: path, headers: headers,
            body: { contents.map { .stream(FileChunks(url: $0), length: .known(size)) } ?? .bytes(ByteBuffer()) },
            isIdempotent: false)
        let (response, _) = try await client.sendCollecting(request)
        return response.status
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
        default: throw WebDAVClient.error(for: response.status, path: source, method: request.method)
        }
    }
}

/// A file's bytes as request-body chunks, read off the cooperative threads.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let url: URL

    func makeAsyncIterator() -> Iterator { Iterator(url: url) }

    struct Iterator: AsyncIteratorProtocol {
        let url: URL
        var handle: FileHandle?
        var finished = false

        init(url: URL) { self.url = url }

        mutating func next() async throws -> ByteBuffer? {
            if finished { return nil }
            if handle == nil {
                let url = url
                handle = try await BlockingIO.run { try FileHandle(forReadingFrom: url) }
            }
            let handle = handle!
            let chunk = try await BlockingIO.run { try handle.read(upToCount: 1 << 20) ?? Data() }
            if chunk.isEmpty {
                finished = true
                try? handle.close()
                return nil
            }
            return ByteBuffer(bytes: chunk)
        }
    }
}
