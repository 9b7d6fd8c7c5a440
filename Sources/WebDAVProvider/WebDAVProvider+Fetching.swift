import AsyncHTTPClient
import FileProviderKit
import Foundation
import NIOCore
import NIOHTTP1

extension WebDAVProvider {
    /// One `GET` of the whole file, streamed into the sink as it arrives. Without `version` the
    /// current content is fetched; with one, a file that changed since gets
    /// `versionNoLongerAvailable` before a byte reaches the sink. No PROPFIND first: the GET's own
    /// headers give the size and version of the bytes sent. (No `If-Match` either: a weak ETag,
    /// which Apache sends for a second after each change, never matches one.)
    public func fetchContents(for identifier: ItemIdentifier, version: ItemVersion?, into sink: any ContentSink)
        async throws -> Item
    {
        let location = try await fileLocation(identifier)
        let verdict = { @Sendable (head: HTTPResponseHead) in
            Self.verdictOnWhole(head, location: location, version: version)
        }
        let response = try await client.sendStreaming(
            WebDAVClient.Request(method: .GET, path: location.path),
            admitting: StreamedBody.Admission(sink: sink) { verdict($0).start })
        guard let (item, _) = try await take(response, judged: verdict(response.head), of: location, into: sink) else {
            throw WebDAVClient.error(for: response.status, path: location.path, method: .GET)
        }
        return item
    }

    /// One `GET` with `Range` for the aligned blocks around `minimalRange`. The answer must be the
    /// range asked for (`206` with the matching `Content-Range`) or the whole file (`200`, which the
    /// contract allows); anything else is refused before a byte reaches the sink. With
    /// `strictVersioning` the answer's ETag must be the version's, checked before a byte is written.
    public func fetchPartialContents(
        for identifier: ItemIdentifier, version: ItemVersion, minimalRange: Range<UInt64>, aligningTo alignment: UInt64,
        options: PartialFetchOptions, into sink: any ContentSink
    ) async throws -> PartialFetchResult {
        let location = try await fileLocation(identifier)
        let wanted = PartialFetchResult.alignedRange(covering: minimalRange, alignment: alignment, size: .max)
        let strict = options.contains(.strictVersioning)
        guard !wanted.isEmpty else {
            let item = try await current(identifier).item
            if strict, item.version.content != version.content { throw ProviderError.versionNoLongerAvailable }
            return PartialFetchResult(retrievedRange: wanted.lowerBound..<wanted.lowerBound, item: item)
        }
        let verdict = { @Sendable (head: HTTPResponseHead) in
            Self.verdictOnRange(head, location: location, wanted: wanted, version: strict ? version : nil)
        }
        let headers = [("Range", "bytes=\(wanted.lowerBound)-\(wanted.upperBound - 1)")]
        let response = try await client.sendStreaming(
            WebDAVClient.Request(method: .GET, path: location.path, headers: headers),
            admitting: StreamedBody.Admission(sink: sink) { verdict($0).start })
        if let (item, retrieved) = try await take(response, judged: verdict(response.head), of: location, into: sink) {
            return PartialFetchResult(retrievedRange: retrieved, item: item)
        }
        let item = try await current(identifier).item
        if strict, item.version.content != version.content { throw ProviderError.versionNoLongerAvailable }
        let start = min(wanted.lowerBound, item.size / max(alignment, 1) * max(alignment, 1))
        return PartialFetchResult(retrievedRange: start..<start, item: item)
    }

    /// The verdict on the head of a whole-file `GET`: `200`, the same file, and `version` when given.
    private static func verdictOnWhole(_ head: HTTPResponseHead, location: ItemLocation, version: ItemVersion?)
        -> GetVerdict
    {
        guard head.status == .ok else {
            return .refused(WebDAVClient.error(for: head.status, path: location.path, method: .GET))
        }
        return verdictOnFile(head, location: location, version: version)
    }

    /// The verdict on the head of a `GET` with `Range: wanted`: the range itself, or the whole
    /// file; with `version`, only that version.
    private static func verdictOnRange(
        _ head: HTTPResponseHead, location: ItemLocation, wanted: Range<UInt64>, version: ItemVersion?
    ) -> GetVerdict {
        switch head.status {
        case .ok:
            return verdictOnFile(head, location: location, version: version)
        case .partialContent:
            if isOtherFile(head.headers, identifier: location.identifier) { return .otherFile }
            guard let range = contentRange(head.headers), range.start == wanted.lowerBound,
                range.end + 1 == wanted.upperBound
                    || (range.end + 1 < wanted.upperBound && range.end + 1 == range.total)
            else {
                let sent = head.headers.first(name: "Content-Range") ?? "none"
                return .refused(
                    .cannotSynchronize(
                        reason: "GET \(location.path): asked for bytes \(wanted.lowerBound)-\(wanted.upperBound - 1), "
                            + "the server sent Content-Range \(sent)"))
            }
            let item = Item(location, size: range.total, headers: head.headers)
            if let version, item.version.content != version.content { return .refused(.versionNoLongerAvailable) }
            return .content(item, bytes: range.start..<(range.end + 1))
        case .rangeNotSatisfiable:
            return .notSatisfiable
        default:
            return .refused(WebDAVClient.error(for: head.status, path: location.path, method: .GET))
        }
    }

    /// The verdict on a `200`: the whole file, its size from `Content-Length` when sent.
    private static func verdictOnFile(_ head: HTTPResponseHead, location: ItemLocation, version: ItemVersion?)
        -> GetVerdict
    {
        if isOtherFile(head.headers, identifier: location.identifier) { return .otherFile }
        let expected = head.headers.first(name: "Content-Length").flatMap(UInt64.init)
        let item = Item(location, size: expected ?? 0, headers: head.headers)
        if let version, item.version.content != version.content { return .refused(.versionNoLongerAvailable) }
        return .content(item, bytes: expected.map { 0..<$0 })
    }

    /// Acts on a `GET`'s verdict: streams wanted content into the sink (already under way when the
    /// event loop admitted it) and returns the item with the bytes received; drops any other body
    /// and throws its error; nil for `notSatisfiable`.
    private func take(
        _ response: StreamedResponse, judged verdict: GetVerdict, of location: ItemLocation, into sink: any ContentSink
    ) async throws -> (Item, Range<UInt64>)? {
        let path = location.path
        switch verdict {
        case .content(let item, let bytes?):
            try await receive(response, of: path, bytes: bytes, version: item.version, into: sink)
            return (item, bytes)
        case .content(var item, nil):
            item.size = try await streamUnannounced(response, of: path, into: sink)
            return (item, 0..<item.size)
        case .otherFile:
            await response.discardBody()
            fileIDs.forget(location.identifier)
            throw ProviderError.noSuchItem(location.identifier)
        case .notSatisfiable:
            await response.discardBody()
            return nil
        case .refused(let error):
            await response.discardBody()
            throw error
        }
    }

    /// Where a file identifier was last seen; the root is a folder and cannot be fetched.
    private func fileLocation(_ identifier: ItemIdentifier) async throws -> ItemLocation {
        let path = try path(of: identifier)
        guard !path.components.isEmpty else {
            throw ProviderError.cannotSynchronize(reason: "the root is a folder and has no contents")
        }
        let known = fileIDs.parent(of: identifier)
        let parent = if let known { known } else { try await folderIdentifier(path.parent) }
        return ItemLocation(identifier: identifier, parent: parent, path: path)
    }

    /// Whether a GET of a fileid reached another file at the old place: Nextcloud's `OC-FileId`
    /// header names another id. Nextcloud spells the header as `oc:id` does: the fileid
    /// zero-padded, then the instance id.
    private static func isOtherFile(_ headers: HTTPHeaders, identifier: ItemIdentifier) -> Bool {
        guard RemotePath(identifier: identifier) == nil, let sent = headers.first(name: "OC-FileId") else {
            return false
        }
        return sent != identifier.rawValue && Int(sent.prefix(while: \.isNumber)) != Int(identifier.rawValue)
    }

    /// Streams `response`, which carries `bytes` of the file, into the sink. When the connection
    /// breaks off or the body ends short, asks for the rest with `Range` — at most `retries` times,
    /// and only from a server that still has `version` — so a dropped connection costs a request,
    /// not the read. Throws `serverUnreachable` when the rest cannot be had.
    private func receive(
        _ response: StreamedResponse, of path: RemotePath, bytes: Range<UInt64>, version: ItemVersion,
        into sink: any ContentSink
    ) async throws {
        var response = response
        var position = bytes.lowerBound
        var resumes = 0
        while true {
            let failure: String
            do {
                position += try await response.body.stream(into: sink, from: position)
                if position == bytes.upperBound { return }
                guard position < bytes.upperBound else {
                    throw ProviderError.cannotSynchronize(reason: "GET \(path): the server sent more than it announced")
                }
                failure = "the server sent \(position - bytes.lowerBound) of \(bytes.count) bytes"
            } catch let broken as BrokenOff {
                position = broken.position
                failure = broken.reason
            }
            guard resumes < client.configuration.retries else {
                throw ProviderError.serverUnreachable(reason: "GET \(path): \(failure)")
            }
            resumes += 1
            response = try await client.sendStreaming(
                WebDAVClient.Request(
                    method: .GET, path: path, headers: [("Range", "bytes=\(position)-\(bytes.upperBound - 1)")]))
            let range = Self.contentRange(response.headers)
            guard response.status == .partialContent, range?.start == position,
                range.map({ $0.end + 1 }) == bytes.upperBound,
                RemoteVersion.make(headers: response.headers, size: 0).content == version.content
            else {
                await response.discardBody()
                throw ProviderError.serverUnreachable(reason: "GET \(path): \(failure), and the rest could not be had")
            }
        }
    }

    /// Streams a body sent without a length, which cannot be resumed; returns its length.
    private func streamUnannounced(_ response: StreamedResponse, of path: RemotePath, into sink: any ContentSink)
        async throws -> UInt64
    {
        do {
            return try await response.body.stream(into: sink, from: 0)
        } catch let broken as BrokenOff {
            throw ProviderError.serverUnreachable(reason: "GET \(path): \(broken.reason)")
        }
    }

    /// `Content-Range: bytes START-END/TOTAL`.
    static func contentRange(_ headers: HTTPHeaders) -> (start: UInt64, end: UInt64, total: UInt64)? {
        guard let value = headers.first(name: "Content-Range"), value.hasPrefix("bytes ") else { return nil }
        let parts = value.dropFirst(6).split(whereSeparator: { $0 == "-" || $0 == "/" })
        guard parts.count == 3, let start = UInt64(parts[0]), let end = UInt64(parts[1]), let total = UInt64(parts[2]),
            start <= end, end < total
        else { return nil }
        return (start, end, total)
    }
}

/// A received buffer handed to a sink without copying it.
struct BufferBytes: ContiguousBytes, Sendable {
    let buffer: ByteBuffer

    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try buffer.withUnsafeReadableBytes(body)
    }
}
