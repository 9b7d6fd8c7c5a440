import FileProviderKit
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MetadataStore
import Synchronization
import SystemPackage

/// The cached bytes of one content version of one item: a sparse file the size of the content,
/// the byte ranges that have landed in it, and the readers waiting for bytes still to come.
///
/// Bytes land through `write` (from a provider's sink); a reader calls `waitUntilPresent` and is
/// woken as soon as its range is covered, or with the error that ended the fetch. `commit` fsyncs
/// the file and records the fully landed blocks in the store, which is what survives a crash.
public final class CachedContent: Sendable {
    public let identifier: ItemIdentifier
    public let contentVersion: [UInt8]
    public let size: UInt64
    public let blockSize: UInt64
    public let fileNumber: Int64
    /// The open cache file; valid for this object's lifetime.
    public let fileDescriptor: FileDescriptor
    let path: FilePath
    private let store: MetadataStore

    private struct Waiter {
        let range: Range<UInt64>
        let continuation: CheckedContinuation<Void, any Error>
    }

    /// Guards the landed ranges, the blocks already recorded durably, and the waiters.
    private struct State {
        var landed = ByteRanges()
        var committed: ByteRanges
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiterID: UInt64 = 0
        /// Why the last fetch failed; readers arriving before a new fetch starts get it at once.
        var failure: (any Error)?
    }
    private let state: Mutex<State>

    init(record: ContentRecord, path: FilePath, fileDescriptor: FileDescriptor, store: MetadataStore) {
        self.identifier = record.identifier
        self.contentVersion = record.contentVersion
        self.size = record.size
        self.blockSize = record.blockSize
        self.fileNumber = record.fileNumber
        self.path = path
        self.fileDescriptor = fileDescriptor
        self.store = store
        let present = BlockMap(bytes: record.presentBlocks).ranges(blockSize: record.blockSize, size: record.size)
        self.state = Mutex(State(landed: present, committed: present))
    }

    deinit { try? fileDescriptor.close() }

    /// True when every byte of `range` (clipped to the content) is here.
    public func isPresent(_ range: Range<UInt64>) -> Bool {
        let clipped = range.clamped(to: 0..<size)
        return state.withLock { $0.landed.contains(clipped) }
    }

    /// Bytes of the content that are here.
    public var presentBytes: UInt64 { state.withLock { $0.landed.count } }

    /// True when the whole content is here.
    public var isComplete: Bool { isPresent(0..<size) }

    /// Stores fetched bytes at `offset` and wakes the readers they satisfy.
    public func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws {
        let count = bytes.withUnsafeBytes { $0.count }
        guard offset + UInt64(count) <= size else {
            throw ProviderError.cannotSynchronize(
                reason: "provider wrote \(count) bytes at \(offset), past the end of a \(size)-byte file")
        }
        let descriptor = fileDescriptor
        try await BlockingIO.run {
            try bytes.withUnsafeBytes { buffer in
                _ = try descriptor.writeAll(toAbsoluteOffset: Int64(offset), buffer)
            }
        }
        markLanded(offset..<offset + UInt64(count))
    }

    private func markLanded(_ range: Range<UInt64>) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.landed.insert(range)
            let done = state.waiters.filter { state.landed.contains($0.value.range) }
            for id in done.keys { state.waiters[id] = nil }
            return done.values.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once every byte of `range` (clipped to the content) is here; throws the error given
    /// to `failWaiters`, or CancellationError when the calling task is cancelled.
    public func waitUntilPresent(_ range: Range<UInt64>) async throws {
        let wanted = range.clamped(to: 0..<size)
        let id = state.withLock { state -> UInt64 in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Bool, any Error> in
                    if state.landed.contains(wanted) { return .success(true) }
                    if let failure = state.failure { return .failure(failure) }
                    state.waiters[id] = Waiter(range: wanted, continuation: continuation)
                    return .success(false)
                }
                switch outcome {
                case .success(true): continuation.resume()
                case .success(false): break
                case .failure(let error): continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Wakes every waiter whose bytes have not landed with `error` (the fetch that would have
    /// brought them failed), and answers later waiters the same until `clearFailure`.
    public func failWaiters(with error: any Error) {
        let waiters = state.withLock { state -> [Waiter] in
            state.failure = error
            let all = Array(state.waiters.values)
            state.waiters.removeAll()
            return all
        }
        for waiter in waiters { waiter.continuation.resume(throwing: error) }
    }

    /// Lets readers wait again: a new fetch is starting.
    public func clearFailure() {
        state.withLock { $0.failure = nil }
    }

    /// Forgets bytes that landed but were not committed (a fetch whose data cannot be trusted).
    public func discardUncommitted() {
        state.withLock { $0.landed = $0.committed }
    }

    /// Makes the landed bytes durable: fsyncs the cache file, then records every fully landed
    /// block in the store. A block is recorded only after its data is on disk. Returns the map
    /// now recorded.
    func commit() async throws -> [UInt8] {
        let landed = state.withLock { $0.landed }
        let descriptor = fileDescriptor
        try await BlockingIO.run {
            guard fsync(descriptor.rawValue) == 0 else { throw Errno(rawValue: errno) }
        }
        let map = BlockMap(covering: landed, blockSize: blockSize, size: size)
        try await store.savePresentBlocks(fileNumber: fileNumber, presentBlocks: map.bytes)
        let committed = map.ranges(blockSize: blockSize, size: size)
        state.withLock { $0.committed = committed }
        return map.bytes
    }

    /// Reads `length` bytes at `offset` from the cache file; the caller made sure they are here.
    public func read(offset: UInt64, length: Int) async throws -> [UInt8] {
        let descriptor = fileDescriptor
        return try await BlockingIO.run {
            var buffer = [UInt8](repeating: 0, count: length)
            let count = try buffer.withUnsafeMutableBytes { try descriptor.read(fromAbsoluteOffset: Int64(offset), into: $0) }
            return Array(buffer.prefix(count))
        }
    }
}
