import FileProviderKit
import Foundation
import Synchronization

/// The folder where long listings wait for their next pages, and how far each listing still being
/// written has got.
///
/// A listing's first page is handed out as soon as it is parsed, while the rest of the PROPFIND
/// answer is still arriving and being spooled (`ListingSpool`), so the engine stores pages beside
/// the parse instead of after it. A page is read only up to what its writer has flushed (whole
/// records), and waits while that is nothing new; a spool whose writer failed fails its reader
/// with the same error.
final class ListingSpools: Sendable {
    let directory: URL
    private let writing = Mutex<[String: Progress]>([:])

    private enum Progress {
        case flushed(UInt64)
        case failed(any Error)
    }

    /// How long a reader sleeps before looking again at a spool that has nothing new.
    private static let pollInterval = Duration.milliseconds(2)

    init(directory: URL) {
        self.directory = directory
    }

    func file(_ id: String) -> URL {
        directory.appending(path: "listing-\(id).spool")
    }

    // MARK: The writer's side

    func begin(_ id: String) {
        writing.withLock { $0[id] = .flushed(0) }
    }

    func flushed(_ id: String, upTo size: UInt64) {
        writing.withLock { $0[id] = .flushed(size) }
    }

    func finished(_ id: String) {
        writing.withLock { _ = $0.removeValue(forKey: id) }
    }

    func failed(_ id: String, _ error: any Error) {
        writing.withLock { $0[id] = .failed(error) }
    }

    // MARK: The reader's side

    /// Up to `limit` items from the page `token` names, and the token of the page after them.
    func page(_ token: EnumerationPage, limit: Int) async throws -> ItemPage {
        let parts = String(decoding: token.bytes, as: UTF8.self).split(separator: ":")
        guard parts.count == 2, UUID(uuidString: String(parts[0])) != nil, let offset = UInt64(parts[1]) else {
            throw ProviderError.pageExpired
        }
        let id = String(parts[0])
        let end = try await readableEnd(of: id, beyond: offset)
        let file = self.file(id)
        return try await BlockingIO.run {
            guard let handle = try? FileHandle(forReadingFrom: file) else { throw ProviderError.pageExpired }
            defer { try? handle.close() }
            try handle.seek(toOffset: offset)
            var items: [Item] = []
            var consumed = offset
            var position = offset
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
                    let wanted = end.map { Int(min($0 - position, 1 << 20)) } ?? 1 << 20
                    let chunk = wanted > 0 ? try handle.read(upToCount: wanted) ?? Data() : Data()
                    if chunk.isEmpty {
                        atEnd = true
                        break
                    }
                    position += UInt64(chunk.count)
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
            if end == nil, !atEnd, bufferEmpty, try handle.read(upToCount: 1)?.isEmpty ?? true { atEnd = true }
            // A spool still being written ends only when its writer says so: its next page waits.
            if end == nil, atEnd, bufferEmpty {
                try? FileManager.default.removeItem(at: file)
                return ItemPage(items: items, nextPage: nil)
            }
            return ItemPage(items: items, nextPage: try EnumerationPage("\(id):\(consumed)"))
        }
    }

    /// Nil when the spool `id` is complete (or unknown); otherwise how many of its bytes its writer
    /// has flushed, once that is more than `offset`. Throws the writer's error if it failed.
    private func readableEnd(of id: String, beyond offset: UInt64) async throws -> UInt64? {
        while true {
            let progress = writing.withLock { writing -> Progress? in
                let progress = writing[id]
                if case .failed = progress { writing[id] = nil }
                return progress
            }
            switch progress {
            case nil: return nil
            case .failed(let error):
                try? FileManager.default.removeItem(at: file(id))
                throw error
            case .flushed(let size) where size > offset: return size
            case .flushed: try await Task.sleep(for: Self.pollInterval)
            }
        }
    }
}
