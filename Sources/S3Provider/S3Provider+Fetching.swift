import AsyncHTTPClient
import FileProviderKit
import Foundation
import NIOCore
import NIOHTTP1

extension S3Provider {
    public func fetchContents(for identifier: ItemIdentifier, version: ItemVersion?, into sink: any ContentSink)
        async throws -> Item
    {
        let path = S3Path(identifier)
        guard !path.isFolder else { throw ProviderError.cannotSynchronize(reason: "\(path) is a folder") }
        let (item, _) = try await get(path, version: version, range: nil, into: sink)
        return item
    }

    public func fetchPartialContents(
        for identifier: ItemIdentifier, version: ItemVersion, minimalRange: Range<UInt64>,
        aligningTo alignment: UInt64, options: PartialFetchOptions, into sink: any ContentSink
    ) async throws -> PartialFetchResult {
        let path = S3Path(identifier)
        guard !path.isFolder else { throw ProviderError.cannotSynchronize(reason: "\(path) is a folder") }
        // The object's size is not known here (the engine's may be stale): the server cuts the
        // range at the end, and the answer's Content-Range says where.
        let wanted = PartialFetchResult.alignedRange(covering: minimalRange, alignment: alignment, size: .max)
        guard !wanted.isEmpty else {
            let item = try await head(path)
            guard item.version.content == version.content else { throw ProviderError.versionNoLongerAvailable }
            let start = min(wanted.lowerBound, item.size)
            return PartialFetchResult(retrievedRange: start..<start, item: item)
        }
        let (item, range) = try await get(path, version: version, range: wanted, into: sink)
        return PartialFetchResult(retrievedRange: range, item: item)
    }

    /// A `GET` of the file at `path` (of `range`, else whole) with `If-Match` when a version is
    /// asked for, its bytes written to `sink` as they arrive. Returns the item and the bytes
    /// written. Refuses an answer that is not what was asked: another ETag, a `Content-Range`
    /// that is not the range, a body shorter or longer than it says.
    func get(_ path: S3Path, version: ItemVersion?, range: Range<UInt64>?, into sink: any ContentSink) async throws
        -> (Item, Range<UInt64>)
    {
        var headers: [(String, String)] = []
        if let version { headers.append(("If-Match", S3Path.etag(of: version))) }
        if let range { headers.append(("Range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)")) }
        let response = try await client.send(.init(method: .GET, key: key(of: path), headers: headers))
        let what = "GET \(path)"
        switch response.status.code {
        case 200, 206:
            break
        case 416 where range != nil:
            // The range starts at or past the end: the object is smaller than the engine thought.
            _ = try? await response.body.collect(upTo: 1 << 16)
            let item = try await head(path)
            if let version, item.version.content != version.content { throw ProviderError.versionNoLongerAvailable }
            let start = min(range!.lowerBound, item.size)
            return (item, start..<start)
        case 412:
            _ = try? await response.body.collect(upTo: 1 << 16)
            throw ProviderError.versionNoLongerAvailable
        default:
            let body = (try? await response.body.collect(upTo: 1 << 16)).map { Array($0.readableBytesView) } ?? []
            throw client.error(
                for: .init(status: response.status, headers: response.headers, body: body), doing: what,
                identifier: path.identifier)
        }
        var item = try path.fileItem(headers: response.headers)
        if let version, item.version.content != version.content {
            throw ProviderError.cannotSynchronize(reason: "\(what): the server sent another version than asked for")
        }
        let said = S3ObjectMetadata(headers: response.headers)
        item = await metadata.learn(said, of: item)
        // Without user metadata the answer says nothing a listing did not.
        if !said.isEmpty { await sink.describe(item) }
        let received: Range<UInt64>
        if response.status.code == 206 {
            guard let range, let said = response.headers.first(name: "content-range").flatMap(Self.contentRange),
                said.lowerBound == range.lowerBound, said.upperBound == min(range.upperBound, item.size)
            else {
                throw ProviderError.cannotSynchronize(reason: "\(what): the Content-Range is not the range asked for")
            }
            received = said
        } else {
            received = 0..<item.size
        }
        var offset = received.lowerBound
        do {
            for try await buffer in response.body {
                guard offset + UInt64(buffer.readableBytes) <= received.upperBound else {
                    throw ProviderError.cannotSynchronize(reason: "\(what): the body is longer than it says")
                }
                try await sink.write(Array(buffer.readableBytesView), at: offset)
                offset += UInt64(buffer.readableBytes)
            }
        } catch let error as ProviderError {
            throw error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw ProviderError.serverUnreachable(reason: "\(what) broke off: \(error)")
        }
        guard offset == received.upperBound else {
            throw ProviderError.cannotSynchronize(reason: "\(what): the body is shorter than it says")
        }
        return (item, received)
    }

    /// `bytes 0-9/100` as `0..<10`.
    static func contentRange(_ text: String) -> Range<UInt64>? {
        guard text.hasPrefix("bytes ") else { return nil }
        let parts = text.dropFirst(6).split(separator: "/").first?.split(separator: "-")
        guard let parts, parts.count == 2, let first = UInt64(parts[0]), let last = UInt64(parts[1]), last >= first
        else { return nil }
        return first..<(last + 1)
    }
}
