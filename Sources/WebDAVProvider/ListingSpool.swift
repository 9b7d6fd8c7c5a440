import FileProviderKit
import Foundation

/// The part of a long listing beyond its first page, kept on disk until the engine asks for it.
///
/// A PROPFIND answer comes whole, but the engine takes a listing page by page; holding the rest of
/// a 100 000-entry folder in memory meanwhile is what this avoids. Items are `PackedItem` records
/// in a file named by a random id; a page token is `<id>:<offset>` — the file and where the next
/// page starts.
/// The file is removed with its last page; a token whose file is gone gets `pageExpired`.
struct ListingSpool {
    /// Items waiting to be written, flushed in batches so disk writes stay large.
    private var pending: [UInt8] = []
    private let file: URL
    private let id = UUID().uuidString
    private static let flushSize = 1 << 20

    init(directory: URL) {
        file = Self.file(id, in: directory)
    }

    mutating func append(_ item: Item) async throws {
        PackedItem.append(item, to: &pending)
        if pending.count >= Self.flushSize { try await flush() }
    }

    /// Writes what is pending and returns the token of the first spooled page.
    mutating func finish() async throws -> EnumerationPage {
        try await flush()
        return try EnumerationPage("\(id):0")
    }

    private mutating func flush() async throws {
        let (data, file) = (pending, file)
        pending = []
        try await BlockingIO.run {
            if !FileManager.default.fileExists(atPath: file.path) {
                _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            }
            let handle = try FileHandle(forWritingTo: file)
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: data)
        }
    }

    /// Up to `limit` items from the page `token` names, and the token of the page after them.
    static func page(_ token: EnumerationPage, in directory: URL, limit: Int) async throws -> ItemPage {
        let parts = String(decoding: token.bytes, as: UTF8.self).split(separator: ":")
        guard parts.count == 2, UUID(uuidString: String(parts[0])) != nil, let offset = UInt64(parts[1]) else {
            throw ProviderError.pageExpired
        }
        let id = String(parts[0])
        let file = Self.file(id, in: directory)
        return try await BlockingIO.run {
            guard let handle = try? FileHandle(forReadingFrom: file) else { throw ProviderError.pageExpired }
            defer { try? handle.close() }
            try handle.seek(toOffset: offset)
            var items: [Item] = []
            var consumed = offset
            var buffer: [UInt8] = []
            var index = 0
            var atEnd = false
            while items.count < limit {
                let record: (item: Item, end: Int)?
                do {
                    record = try PackedItem.next(in: buffer, at: index)
                } catch {
                    throw ProviderError.cannotSynchronize(reason: "the listing spool \(file.path) is damaged")
                }
                guard let record else {
                    let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
                    if chunk.isEmpty {
                        atEnd = true
                        break
                    }
                    buffer = Array(buffer[index...]) + chunk
                    index = 0
                    continue
                }
                items.append(record.item)
                consumed += UInt64(record.end - index)
                index = record.end
            }
            let bufferEmpty = index == buffer.count
            if atEnd && !bufferEmpty {
                throw ProviderError.cannotSynchronize(reason: "the listing spool \(file.path) ends inside an item")
            }
            if !atEnd, bufferEmpty, try handle.read(upToCount: 1)?.isEmpty ?? true { atEnd = true }
            if atEnd && bufferEmpty {
                try? FileManager.default.removeItem(at: file)
                return ItemPage(items: items, nextPage: nil)
            }
            return ItemPage(items: items, nextPage: try EnumerationPage("\(id):\(consumed)"))
        }
    }

    private static func file(_ id: String, in directory: URL) -> URL {
        directory.appending(path: "listing-\(id).spool")
    }
}
