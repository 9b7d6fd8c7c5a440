import FileProviderKit
import Foundation

/// The part of a long listing beyond its first page, written to disk as the PROPFIND answer
/// arrives and read back page by page by `ListingSpools`.
///
/// Holding the rest of a 100 000-entry folder in memory until the engine asks for it is what this
/// avoids. Items are `PackedItem` records in a file named by a random id; a page token is
/// `<id>:<offset>`: the file and where the next page starts. The file is removed with its last
/// page; a token whose file is gone gets `pageExpired`.
struct ListingSpool {
    /// Items waiting to be written, flushed in batches so disk writes stay large.
    private var pending: [UInt8] = []
    private var written: UInt64 = 0
    private let spools: ListingSpools
    private let id = UUID().uuidString
    private static let flushSize = 1 << 20

    /// A spool in `spools`, whose pages wait for its writer from now on.
    init(in spools: ListingSpools) {
        self.spools = spools
        spools.begin(id)
    }

    /// The token of the first spooled page.
    var firstPage: EnumerationPage {
        get throws { try EnumerationPage("\(id):0") }
    }

    mutating func append(_ item: Item) async throws {
        PackedItem.append(item, to: &pending)
        if pending.count >= Self.flushSize { try await flush() }
    }

    /// Writes what is pending; the spool is complete.
    mutating func finish() async throws {
        try await flush()
        spools.finished(id)
    }

    /// The listing broke off: its reader gets `error`.
    func fail(_ error: any Error) {
        spools.failed(id, error)
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
