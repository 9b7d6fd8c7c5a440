import BlockCache
import FileProviderKit
import FuseKit
import MetadataStore
import Synchronization

/// One open file handle: the item as it was at open, so the handle reads one content version from
/// open to close, and its cached content once a read needed it. A handle of a file whose content is
/// local (written here) reads and writes that file instead.
final class OpenFile: Sendable {
    let record: ItemRecord
    private let content: Mutex<CachedContent?>
    /// This handle's read-ahead.
    let readAhead: Mutex<ReadAheadWindow>
    /// The local content, for files written here.
    let local: LocalFile?
    /// Opened for writing: counted as a writer until released.
    let isWritable: Bool
    /// Opened with direct I/O: what it reads does not stay in the mount's page cache.
    let bypassesPageCache: Bool
    /// Whether the kernel reads this handle's cache file itself (`PassthroughFiles`).
    let opening: PassthroughFiles.Opening
    /// Whether the store holds this writer's mark until its release (`FileSystem.markWriter`).
    let marksWriter: Bool
    /// Whether the journal already says the contents changed (so a write needs no entry of its
    /// own), and whether bytes were written since the handle's changes were last saved.
    private let writes = Mutex((journalled: false, unsaved: false))

    init(
        record: ItemRecord, readAhead: ReadAheadWindow, local: LocalFile? = nil, isWritable: Bool = false,
        bypassesPageCache: Bool = false, content: CachedContent? = nil, opening: PassthroughFiles.Opening = .requests,
        marksWriter: Bool = false
    ) {
        self.record = record
        self.readAhead = Mutex(readAhead)
        self.local = local
        self.isWritable = isWritable
        self.bypassesPageCache = bypassesPageCache
        self.content = Mutex(content)
        self.opening = opening
        self.marksWriter = marksWriter
    }

    /// The answer to the open that made this handle. While a handle of an older version is open
    /// (the remote changed the file), the page cache, which is the inode's, holds that version's
    /// pages: this one bypasses it.
    func reply(_ handle: UInt64, olderVersionOpen: Bool) -> OpenReply {
        switch opening {
        case .requests:
            OpenReply(
                handle: FileHandle(handle), keepCache: !olderVersionOpen,
                directIO: olderVersionOpen || bypassesPageCache)
        case .passthrough(let backing):
            OpenReply(handle: FileHandle(handle), backing: backing)
        case .directIO(let backing):
            OpenReply(handle: FileHandle(handle), directIO: true, backing: backing)
        }
    }

    /// A writer whose writes may reach the local content without the daemon seeing them: its
    /// memory maps are of the passthrough backing file. Its every save records the contents as
    /// changed.
    var writesUnseen: Bool { isWritable && opening.backing != nil }

    /// A writer whose writes the kernel makes itself, on the local content: none reaches the
    /// daemon (`FileSystem.create`, `FileSystem.openForWriting`).
    var writesThroughKernel: Bool { isWritable && opening.passesThrough }

    /// True when this handle reads the content version `record` has now.
    func isOf(_ record: ItemRecord) -> Bool { self.record.item.version.content == record.item.version.content }

    /// Notes a write; true when it must journal the change (the first since the last save, unless
    /// the journal already holds one).
    func noteWrite() -> Bool {
        writes.withLock { writes in
            defer { writes = (journalled: true, unsaved: true) }
            return !writes.journalled
        }
    }

    /// The creation of a new file journalled its contents: its writes need no entry until saved.
    func noteJournalled() {
        writes.withLock { $0.journalled = true }
    }

    /// True when writes happened since the last save.
    var hasUnsavedWrites: Bool { writes.withLock { $0.unsaved } }

    /// True when writes happened since the last save; clears the marks.
    func takeUnsavedWrites() -> Bool {
        writes.withLock { writes in
            guard writes.unsaved else { return false }
            writes = (journalled: false, unsaved: false)
            return true
        }
    }

    /// The cached content, once opened (`cachedContent`).
    var openedContent: CachedContent? { content.withLock { $0 } }

    /// The cached content of this handle's version, opened on first use.
    func cachedContent(in cache: BlockCache) async throws -> CachedContent {
        if let openedContent { return openedContent }
        let item = record.item
        let opened = try await cache.content(
            for: item.identifier, contentVersion: item.version.content, size: item.size)
        return content.withLock { current in
            if let current { return current }
            current = opened
            return opened
        }
    }
}

/// One listing of a directory, as the store had it: the parent (for ".."), the children in
/// readdir order, its `KernelListings.digest`, and the store's item generation read before it.
struct DirectoryListing: Sendable {
    let parent: ItemRecord
    let children: [ItemRecord]
    let digest: Int
    let generation: UInt64

    init(of directory: ItemRecord, parent: ItemRecord, children: [ItemRecord], generation: UInt64) {
        self.parent = parent
        self.children = children
        self.digest = KernelListings.digest(directory: directory, parent: parent, children: children)
        self.generation = generation
    }
}

/// One open directory handle. Its listing is read once, at opendir, or, when the kernel keeps
/// the listing it cached, at the first readdir that still reaches the daemon; it stays the same
/// while the handle is open, so that offsets stay valid.
final class OpenDirectory: Sendable {
    let directory: ItemRecord
    private let loaded: Mutex<DirectoryListing?>

    init(directory: ItemRecord, listing: DirectoryListing?) {
        self.directory = directory
        self.loaded = Mutex(listing)
    }

    /// The handle's listing, read with `read` the first time. (The kernel sends one readdir of a
    /// handle at a time.)
    func listing(read: () async throws -> DirectoryListing) async throws -> DirectoryListing {
        if let listing = heldListing { return listing }
        let listing = try await read()
        return loaded.withLock { loaded in
            if let earlier = loaded { return earlier }
            loaded = listing
            return listing
        }
    }

    /// The handle's listing if it has been read.
    var heldListing: DirectoryListing? { loaded.withLock { $0 } }
}

/// Open handles by number.
final class HandleTable<Value: Sendable>: Sendable {
    private struct State {
        var next: UInt64 = 1
        var values: [UInt64: Value] = [:]
    }
    /// Guards the handles and the next number.
    private let state = Mutex(State())

    func insert(_ value: Value) -> UInt64 {
        state.withLock { state in
            let handle = state.next
            state.next += 1
            state.values[handle] = value
            return handle
        }
    }

    subscript(handle: UInt64) -> Value? { state.withLock { $0.values[handle] } }

    func remove(_ handle: UInt64) { state.withLock { _ = $0.values.removeValue(forKey: handle) } }

    func contains(where predicate: (Value) -> Bool) -> Bool {
        state.withLock { $0.values.values.contains(where: predicate) }
    }

    var count: Int { state.withLock { $0.values.count } }

    /// Every value held now.
    var values: [Value] { state.withLock { Array($0.values.values) } }
}
