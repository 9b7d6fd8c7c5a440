import FileProviderKit
import Foundation
import Synchronization

/// Where long listings wait for their next pages: in memory while their reader keeps up, in a
/// folder on disk beyond that; and how far each listing still being written has got.
///
/// A listing's first page is handed out as soon as it is parsed, while the rest of the PROPFIND
/// answer is still arriving (`ListingSpool`), so the engine stores pages beside the parse instead
/// of after it. The items after the first page are held in memory, up to `memoryBudget` bytes
/// waiting for their reader; once a listing has more waiting, the rest of it goes to a file
/// (DECISIONS 148). A page is read only up to what its writer has handed over (whole records on
/// disk), and waits while that is nothing new; a spool whose writer failed fails its reader with
/// the same error.
final class ListingSpools: Sendable {
    let directory: URL
    /// How many bytes (estimated, `heldSize`) of items one listing may hold in memory for its
    /// reader before the rest of it goes to disk.
    let memoryBudget: Int
    /// How long a finished listing's items stay in memory with no page read of them: its reader
    /// has given up, and its token then gets `pageExpired`.
    let abandonedAfter: Duration
    private let spools = Mutex<[String: Spool]>([:])

    /// One listing being written or read.
    private struct Spool {
        /// Items of the memory part not yet dropped; `held[heldStart]` is item number `firstHeld`
        /// of that part. Items before the last page's start are dropped: its reader asked past them.
        var held: [Item] = []
        var heldStart = 0
        var firstHeld = 0
        var heldBytes = 0
        /// True once the writer puts items on disk: the memory part is complete.
        var onDisk = false
        /// Bytes of whole records flushed to the file.
        var flushed: UInt64 = 0
        var finished = false
        var failure: (any Error)?
        var lastRead = ContinuousClock.now
    }

    /// How long a reader sleeps before looking again at a spool that has nothing new.
    private static let pollInterval = Duration.milliseconds(2)

    init(directory: URL, memoryBudget: Int = 16 << 20, abandonedAfter: Duration = .seconds(60)) {
        self.directory = directory
        self.memoryBudget = memoryBudget
        self.abandonedAfter = abandonedAfter
    }

    func file(_ id: String) -> URL {
        directory.appending(path: "listing-\(id).spool")
    }

    // MARK: The writer's side

    /// Starts the spool `id`, and forgets the memory of finished ones whose reader gave up.
    func begin(_ id: String) {
        let now = ContinuousClock.now
        spools.withLock { spools in
            spools = spools.filter { !($0.value.finished && now - $0.value.lastRead > abandonedAfter) }
            spools[id] = Spool()
        }
    }

    /// Hands `items` to the memory part of `id`; false (and nothing held) when they do not fit
    /// in the budget: the memory part has ended and these go to disk.
    func hold(_ items: [Item], in id: String) -> Bool {
        let size = items.reduce(0) { $0 + Self.heldSize(of: $1) }
        return spools.withLock { spools in
            guard var spool = spools.removeValue(forKey: id) else { return false }
            defer { spools[id] = spool }
            guard !spool.onDisk, spool.heldBytes + size <= memoryBudget else {
                spool.onDisk = true
                return false
            }
            spool.held += items
            spool.heldBytes += size
            return true
        }
    }

    func flushed(_ id: String, upTo size: UInt64) {
        spools.withLock { $0[id]?.flushed = size }
    }

    func finished(_ id: String) {
        spools.withLock { $0[id]?.finished = true }
    }

    func failed(_ id: String, _ error: any Error) {
        spools.withLock { $0[id]?.failure = error }
    }

    /// About the memory an item takes: its variable-length fields and a fixed part.
    private static func heldSize(of item: Item) -> Int {
        let attributes = item.extendedAttributes?.reduce(0) { $0 + $1.key.utf8.count + $1.value.count } ?? 0
        return 256 + item.identifier.rawValue.utf8.count + item.parentIdentifier.rawValue.utf8.count
            + item.filename.bytes.count + item.version.content.count + item.version.metadata.count
            + (item.symlinkTarget?.count ?? 0) + attributes
            + item.userInfo.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
    }

    // MARK: The reader's side

    /// The token of the memory part's page starting at its item `index`.
    static func memoryPage(_ id: String, at index: Int) throws -> EnumerationPage {
        try EnumerationPage("\(id):m\(index)")
    }

    /// Up to `limit` items from the page `token` names, and the token of the page after them.
    func page(_ token: EnumerationPage, limit: Int) async throws -> ItemPage {
        let parts = String(decoding: token.bytes, as: UTF8.self).split(separator: ":")
        guard parts.count == 2, UUID(uuidString: String(parts[0])) != nil else { throw ProviderError.pageExpired }
        let id = String(parts[0])
        if parts[1].first == "m" {
            guard let index = Int(parts[1].dropFirst()) else { throw ProviderError.pageExpired }
            return try await memoryPage(of: id, at: index, limit: limit)
        }
        guard let offset = UInt64(parts[1]) else { throw ProviderError.pageExpired }
        return try await diskPage(of: id, at: offset, limit: limit)
    }

    /// A page of the memory part of `id`, from its item `index`; waits while the writer has
    /// handed over nothing past it and may still.
    private func memoryPage(of id: String, at index: Int, limit: Int) async throws -> ItemPage {
        while true {
            switch spools.withLock({ Self.takeMemoryPage(of: id, at: index, limit: limit, from: &$0) }) {
            case .items(let items, .memory(let next)):
                return ItemPage(items: items, nextPage: try Self.memoryPage(id, at: next))
            case .items(let items, .disk): return ItemPage(items: items, nextPage: try EnumerationPage("\(id):0"))
            case .items(let items, .end): return ItemPage(items: items, nextPage: nil)
            case .wait: try await Task.sleep(for: Self.pollInterval)
            case .expired: throw ProviderError.pageExpired
            case .failed(let error):
                try? FileManager.default.removeItem(at: file(id))
                throw error
            }
        }
    }

    /// What a read of the memory part found.
    private enum MemoryRead {
        case items([Item], Continuation)
        case wait
        case expired
        case failed(any Error)

        /// Where the page after these items is.
        enum Continuation { case memory(Int), disk, end }
    }

    /// Under the lock: the page of spool `id`'s memory part from its item `index`.
    private static func takeMemoryPage(of id: String, at index: Int, limit: Int, from spools: inout [String: Spool])
        -> MemoryRead
    {
        // Taken out while it changes, so that its items are not copied.
        guard var spool = spools.removeValue(forKey: id) else { return .expired }
        if let failure = spool.failure { return .failed(failure) }
        guard index >= spool.firstHeld, index - spool.firstHeld <= spool.held.count - spool.heldStart else {
            spools[id] = spool
            return .expired
        }
        spool.lastRead = .now
        drop(upTo: index, in: &spool)
        let available = spool.held.count - spool.heldStart
        let taken = Array(spool.held[spool.heldStart..<(spool.heldStart + min(limit, available))])
        let isRest = taken.count == available
        // The last page of a listing held wholly in memory: the spool goes with it.
        if isRest, spool.finished, !spool.onDisk { return .items(taken, .end) }
        spools[id] = spool
        if isRest, spool.onDisk { return .items(taken, .disk) }
        return taken.isEmpty ? .wait : .items(taken, .memory(index + taken.count))
    }

    /// Forgets the items before `index`: a page from there was asked for, so its reader has
    /// those. The array is compacted once most of it is dropped.
    private static func drop(upTo index: Int, in spool: inout Spool) {
        let dropped = index - spool.firstHeld
        guard dropped > 0 else { return }
        for item in spool.held[spool.heldStart..<(spool.heldStart + dropped)] { spool.heldBytes -= heldSize(of: item) }
        spool.heldStart += dropped
        spool.firstHeld = index
        if spool.heldStart * 2 >= spool.held.count {
            spool.held.removeFirst(spool.heldStart)
            spool.heldStart = 0
        }
    }

    /// A page of the disk part of `id`, from byte `offset` of its file.
    private func diskPage(of id: String, at offset: UInt64, limit: Int) async throws -> ItemPage {
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
                self.spools.withLock { _ = $0.removeValue(forKey: id) }
                return ItemPage(items: items, nextPage: nil)
            }
            return ItemPage(items: items, nextPage: try EnumerationPage("\(id):\(consumed)"))
        }
    }

    /// Nil when the spool `id` is complete (or unknown); otherwise how many of its bytes its writer
    /// has flushed, once that is more than `offset`. Throws the writer's error if it failed.
    private func readableEnd(of id: String, beyond offset: UInt64) async throws -> UInt64? {
        while true {
            let progress = spools.withLock { spools -> Result<UInt64?, any Error>? in
                guard let spool = spools[id], !spool.finished else { return .success(nil) }
                if let failure = spool.failure {
                    spools[id] = nil
                    return .failure(failure)
                }
                return spool.flushed > offset ? .success(spool.flushed) : nil
            }
            switch progress {
            case .success(let end): return end
            case .failure(let error):
                try? FileManager.default.removeItem(at: file(id))
                throw error
            case nil: try await Task.sleep(for: Self.pollInterval)
            }
        }
    }
}
