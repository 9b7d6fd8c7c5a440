// BlockCache: where fetched contents live on this machine.
//
// Each cached item has one sparse file (named by a number the store hands out) holding one content
// version; the store records which aligned blocks of it are safely on disk. A new content version
// starts a new file and the old one is deleted, so a file's bytes always belong to one version.
// In memory there is at most one `CachedContent` per item, shared by every reader and fetch.

import FileProviderKit
import Foundation
import MetadataStore
import Synchronization
import SystemPackage

/// The cache of item contents for one mount.
public final class BlockCache: Sendable {
    public let directory: FilePath
    public let blockSize: UInt64
    let store: MetadataStore
    let epochs: DurabilityEpochs
    /// Contents whose blocks this mount forgot because the machine went down before they were
    /// known to be on disk (`DurabilityEpochs`).
    public let contentsForgottenAtStart: Int

    /// A content some reader or fetch still holds; it closes its file when the last one lets go.
    struct OpenContent {
        weak var content: CachedContent?
    }

    /// Guards the open contents, the durable record of every cached item, the contents being
    /// opened, and the bookkeeping of eviction (BlockCache+Eviction): the recorded bytes of each
    /// item and their sum, and the items used since their last use was saved.
    struct State {
        var open: [ItemIdentifier: OpenContent] = [:]
        var records: [ItemIdentifier: ContentRecord] = [:]
        var opening: [OpeningKey: Task<CachedContent, any Error>] = [:]
        var bytes: [ItemIdentifier: UInt64] = [:]
        var totalBytes: UInt64 = 0
        var usedSinceSaved: Set<ItemIdentifier> = []
        var onGrowth: (@Sendable () -> Void)?
        /// The number of the next cache file.
        var nextFileNumber: Int64 = 1
        /// Store rows of new cache files still being written, by file number (`beginContent`).
        var rowsBeingWritten: [Int64: Task<Void, any Error>] = [:]

        /// Replaces what is recorded of `identifier` (nil: nothing), keeping the sum right.
        mutating func setRecord(_ record: ContentRecord?, of identifier: ItemIdentifier) {
            totalBytes -= bytes.removeValue(forKey: identifier) ?? 0
            records[identifier] = record
            guard let record else { return }
            let count = BlockMap(bytes: record.presentBlocks).presentByteCount(
                blockSize: record.blockSize, size: record.size)
            bytes[identifier] = count
            totalBytes += count
        }
    }

    struct OpeningKey: Hashable {
        let identifier: ItemIdentifier
        let contentVersion: [UInt8]
    }
    let state: Mutex<State>

    /// Opens the cache in `directory` (created if needed) under the boot `bootID`, loading what
    /// the store recorded and deleting cache files it does not know.
    public init(
        directory: FilePath, blockSize: UInt64, store: MetadataStore,
        bootID: String = DurabilityEpochs.currentBootID()
    ) async throws {
        self.directory = directory
        self.blockSize = blockSize
        self.store = store
        try FileManager.default.createDirectory(atPath: directory.string, withIntermediateDirectories: true)
        (epochs, contentsForgottenAtStart) = try await DurabilityEpochs.begin(
            directory: directory, store: store, bootID: bootID)
        let records = try await store.contentRecords()
        let nextFileNumber = try await store.nextContentFileNumber()
        var state = State()
        for record in records { state.setRecord(record, of: record.identifier) }
        state.nextFileNumber = nextFileNumber
        self.state = Mutex(state)
        _ = Self.typesOfAFirstRead.count
        let known = Set(records.map { String($0.fileNumber) })
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.string)) ?? []
        where !known.contains(name) {
            try? FileManager.default.removeItem(atPath: directory.appending(name).string)
        }
    }

    /// Generic types a mount's first read of a cold file makes the runtime metadata of. Swift's
    /// runtime checks a generic type's requirements when it first makes its metadata, and finds a
    /// conformance it has not seen yet by scanning every conformance record of the process (about
    /// 10 000 here: 0.5 ms each). Made when the cache opens, they cost the first read nothing
    /// (DECISIONS 94).
    private static let typesOfAFirstRead: [Any.Type] = [
        Set<OpeningKey>.self,  // the opening contents
        Set<Int64>.self,  // the rows being written
        Range<UInt64>.self,  // every claim and landed range
    ]

    /// Bytes of `identifier`'s content `contentVersion` that are on this machine (for `du` and
    /// xattrs). Never touches the disk.
    public func localBytes(of identifier: ItemIdentifier, contentVersion: [UInt8]) -> UInt64 {
        state.withLock { state in
            if let content = state.open[identifier]?.content {
                return content.contentVersion == contentVersion ? content.presentBytes : 0
            }
            guard let record = state.records[identifier], record.contentVersion == contentVersion else { return 0 }
            return BlockMap(bytes: record.presentBlocks).ranges(blockSize: record.blockSize, size: record.size).count
        }
    }

    /// The cached content of `identifier` at `contentVersion`, opened or created. A cached older
    /// version is dropped (its file deleted) once no one holds it.
    ///
    /// Concurrent first reads of one version share one opening: two would each start a content
    /// in the store, and the second would delete the first one's file as stale.
    public func content(for identifier: ItemIdentifier, contentVersion: [UInt8], size: UInt64) async throws
        -> CachedContent
    {
        let key = OpeningKey(identifier: identifier, contentVersion: contentVersion)
        let opening = state.withLock { locked -> Task<CachedContent, any Error> in
            if let pending = locked.opening[key] { return pending }
            let task = Task {
                defer { _ = self.state.withLock { $0.opening.removeValue(forKey: key) } }
                return try await self.openContent(for: identifier, contentVersion: contentVersion, size: size)
            }
            locked.opening[key] = task
            return task
        }
        return try await opening.value
    }

    private func openContent(for identifier: ItemIdentifier, contentVersion: [UInt8], size: UInt64) async throws
        -> CachedContent
    {
        if let open = state.withLock({ $0.open[identifier]?.content }), open.contentVersion == contentVersion {
            return open
        }
        let existing = state.withLock { $0.records[identifier] }
        let record: ContentRecord
        var rowWritten: Task<Void, any Error>?
        if let existing, existing.contentVersion == contentVersion, existing.size == size {
            record = existing.blockSize == blockSize ? existing : try await inThisMountsBlocks(existing)
        } else {
            (record, rowWritten) = beginContent(identifier: identifier, contentVersion: contentVersion, size: size)
        }
        let path = directory.appending(String(record.fileNumber))
        let descriptor = try await BlockingIO.run {
            let descriptor = try FileDescriptor.open(
                path, .readWrite, options: [.create, .closeOnExec], permissions: [.ownerReadWrite])
            try descriptor.resize(to: Int64(size))
            return descriptor
        }
        let content = CachedContent(
            record: record, fileDescriptor: descriptor, store: store, epochs: epochs, rowWritten: rowWritten)
        return state.withLock { state -> CachedContent in
            if let open = state.open[identifier]?.content, open.contentVersion == contentVersion { return open }
            state.open[identifier] = OpenContent(content: content)
            state.setRecord(record, of: identifier)
            state.usedSinceSaved.insert(identifier)
            return content
        }
    }

    /// `record` with its map in this mount's block size, saved in the store first: a row made by a
    /// mount with another `--block-size` keeps the blocks it had, and what this mount fetches is
    /// recorded block by block (in the old size, a block landed in parts would be recorded only
    /// once whole). A smaller size keeps every present byte; a larger one keeps the new blocks that
    /// are wholly present (DECISIONS 131).
    private func inThisMountsBlocks(_ record: ContentRecord) async throws -> ContentRecord {
        var converted = record
        let present = BlockMap(bytes: record.presentBlocks).ranges(blockSize: record.blockSize, size: record.size)
        converted.blockSize = blockSize
        converted.presentBlocks = BlockMap(covering: present, blockSize: blockSize, size: record.size).bytes
        try await store.changeBlockSize(
            fileNumber: record.fileNumber, to: blockSize, presentBlocks: converted.presentBlocks)
        return converted
    }

    /// Numbers a new cache file for a content version and writes its row in the store in the
    /// background, then deletes the file of the version it replaces. The first read's fetch does
    /// not wait for the store: only a commit needs the row (a block is recorded only in it), and
    /// deleting the file waits for it (`deleteFile`). Until the row is written the file is not
    /// known at a restart, and is deleted then.
    private func beginContent(identifier: ItemIdentifier, contentVersion: [UInt8], size: UInt64) -> (
        ContentRecord, Task<Void, any Error>
    ) {
        state.withLock { state in
            let record = ContentRecord(
                fileNumber: state.nextFileNumber, identifier: identifier, contentVersion: contentVersion, size: size,
                blockSize: blockSize, presentBlocks: [], lastUsed: Date())
            state.nextFileNumber += 1
            let rowWritten = Task {
                defer { _ = self.state.withLock { $0.rowsBeingWritten.removeValue(forKey: record.fileNumber) } }
                guard let stale = try await self.store.beginContent(record) else { return }
                let stalePath = self.directory.appending(String(stale.fileNumber))
                _ = try? await BlockingIO.run { try FileManager.default.removeItem(atPath: stalePath.string) }
            }
            state.rowsBeingWritten[record.fileNumber] = rowWritten
            return (record, rowWritten)
        }
    }

    /// Forgets the cached content of `identifier` unless it is of `keeping` (the remote's current
    /// version): the remote changed or deleted the item. The file is deleted; a handle reading it
    /// keeps its descriptor, and so the bytes of the version it opened.
    public func discard(_ identifier: ItemIdentifier, keeping current: [UInt8]? = nil) async {
        await forget(identifier) { $0.contentVersion != current }
    }

    /// Forgets the cached content of `identifier` if its record `matches`, and deletes its file;
    /// true when it did.
    @discardableResult
    private func forget(_ identifier: ItemIdentifier, if matches: (ContentRecord) -> Bool) async -> Bool {
        let stale = state.withLock { state -> ContentRecord? in
            guard let record = state.records[identifier], matches(record) else { return nil }
            state.setRecord(nil, of: identifier)
            state.usedSinceSaved.remove(identifier)
            if state.open[identifier]?.content?.fileNumber == record.fileNumber { state.open[identifier] = nil }
            return record
        }
        guard let stale else { return false }
        try? await deleteFile(of: stale)
        return true
    }

    /// Deletes a content's row in the store, then its file (kept if the row could not go: a row
    /// without its file would serve a fresh empty file's zeros after a restart).
    func deleteFile(of record: ContentRecord) async throws {
        // A row still being written is waited for, or it would come back after the delete.
        if let rowWritten = state.withLock({ $0.rowsBeingWritten[record.fileNumber] }) {
            _ = try? await rowWritten.value
        }
        try await store.removeContent(fileNumber: record.fileNumber)
        let path = directory.appending(String(record.fileNumber))
        _ = try? await BlockingIO.run { try FileManager.default.removeItem(atPath: path.string) }
    }

    /// Closes the current durability epoch (`DurabilityEpochs.flush`; one call at a time): the
    /// contents whose cache file could not be flushed are forgotten before the epoch is recorded
    /// durable, so that a crash in between cannot leave their blocks trusted. Returns those.
    public func closeDurabilityEpoch() async throws -> [ItemIdentifier] {
        guard let (epoch, failed) = try await epochs.flush() else { return [] }
        var forgotten: [ItemIdentifier] = []
        for fileNumber in failed {
            // By the identifier it has now: a move may have given it another (`followIdentifiers`).
            let identifier = state.withLock { $0.records.first { $0.value.fileNumber == fileNumber }?.key }
            if let identifier, await forget(identifier, if: { $0.fileNumber == fileNumber }) {
                forgotten.append(identifier)
            }
        }
        try await epochs.markDurable(epoch)
        return forgotten
    }

    /// Records `content`'s landed bytes (see `CachedContent.commit`, and `window` there)
    /// and remembers the result, so `localBytes` stays right after the content is closed.
    public func commit(_ content: CachedContent, window: CommitWindow? = nil) async throws {
        guard let presentBlocks = try await content.commit(window: window) else { return }
        let onGrowth = state.withLock { state -> (@Sendable () -> Void)? in
            guard var record = state.records[content.identifier], record.fileNumber == content.fileNumber else {
                return nil
            }
            record.presentBlocks = presentBlocks
            record.lastUsed = Date()
            state.setRecord(record, of: content.identifier)
            return state.onGrowth
        }
        onGrowth?()
    }
}
