import FileProviderKit
import Foundation

/// The part of a long listing beyond its first page, handed to `ListingSpools` as the PROPFIND
/// answer arrives and read back page by page.
///
/// Items are held in memory while the reader keeps up; once more than the spools' memory budget
/// waits, the rest goes to disk, so that a 100 000-entry folder whose reader is slow or gone does
/// not sit in memory (DECISIONS 26, 148). On disk items are `PackedItem` records in a file named
/// by a random id. A page token is `<id>:m<index>` for the memory part and `<id>:<offset>` for
/// the file: the spool and where the next page starts. The spool is forgotten with its last
/// page; a token of a forgotten spool gets `pageExpired`.
struct ListingSpool {
    /// Items not yet handed to the memory part: handed over in batches, each one take of a lock.
    private var batch: [Item] = []
    /// True once the memory part is full: the rest goes to the file.
    private var onDisk = false
    /// Records waiting to be written, flushed in batches so disk writes stay large.
    private var pending: [UInt8] = []
    private var written: UInt64 = 0
    private let spools: ListingSpools
    private let id = UUID().uuidString
    private static let flushSize = 1 << 20
    private static let batchSize = 256

    /// A spool in `spools`, whose pages wait for its writer from now on.
    init(in spools: ListingSpools) {
        self.spools = spools
        spools.begin(id)
    }

    /// The token of the first spooled page.
    var firstPage: EnumerationPage {
        get throws { try ListingSpools.memoryPage(id, at: 0) }
    }

    mutating func append(_ item: Item) async throws {
        if onDisk {
            PackedItem.append(item, to: &pending)
            if pending.count >= Self.flushSize { try await flush() }
            return
        }
        batch.append(item)
        if batch.count >= Self.batchSize { try await handOver() }
    }

    /// Writes what is pending; the spool is complete.
    mutating func finish() async throws {
        if !batch.isEmpty { try await handOver() }
        // Once the reader is sent to the file, the file must be there, even empty.
        if onDisk { try await flush() }
        spools.finished(id)
    }

    /// The listing broke off: its reader gets `error`.
    func fail(_ error: any Error) {
        spools.failed(id, error)
    }

    /// Hands the batch to the memory part, or to the file once the memory part is full.
    private mutating func handOver() async throws {
        let items = batch
        batch = []
        if spools.hold(items, in: id) { return }
        onDisk = true
        for item in items { PackedItem.append(item, to: &pending) }
        if pending.count >= Self.flushSize { try await flush() }
    }

    private mutating func flush() async throws {
        let (data, file) = (pending, spools.file(id))
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
        written += UInt64(data.count)
        spools.flushed(id, upTo: written)
    }
}
