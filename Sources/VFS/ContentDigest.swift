import Crypto
import FileProviderKit
import Foundation
import MetadataStore
import Synchronization
import SystemPackage

/// The SHA-256 of contents: of a snapshot an upload sent, or of what the remote holds, to tell
/// whether the remote holds bytes an earlier send of a file left there (DECISIONS 307).
enum ContentDigest {
    /// What a send of an empty file carries.
    static let empty = SentContent(size: 0, sha256: Data(SHA256.hash(data: Data())))

    /// The length and SHA-256 of the file at `path`, read in 1 MiB pieces.
    static func of(_ path: FilePath) async throws -> SentContent {
        try await BlockingIO.run {
            let file = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec])
            defer { try? file.close() }
            var hasher = SHA256()
            var size: UInt64 = 0
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let count = try buffer.withUnsafeMutableBytes { try file.read(into: $0) }
                guard count > 0 else { break }
                buffer.withUnsafeBytes {
                    hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0.prefix(count)))
                }
                size += UInt64(count)
            }
            return SentContent(size: size, sha256: Data(hasher.finalize()))
        }
    }

    /// Whether the remote content of `remote` is one of `sent`: of one's size, fetched and hashed,
    /// nothing kept.
    static func remoteHoldsOne(of sent: [SentContent], remote: Item, provider: any FileProvider) async throws -> Bool {
        guard remote.kind == .file, sent.contains(where: { $0.size == remote.size }) else { return false }
        let sink = HashingSink()
        do {
            _ = try await provider.fetchContents(for: remote.identifier, version: remote.version, into: sink)
        } catch where sink.isOutOfOrder {
            return false
        }
        guard let fetched = sink.digest() else { return false }
        return sent.contains(fetched)
    }
}

/// A `ContentSink` that hashes what a fetch delivers, in order; a write out of order ends it.
private final class HashingSink: ContentSink {
    private struct OutOfOrder: Error {}
    private struct State {
        var hasher = SHA256()
        var size: UInt64 = 0
        var isOutOfOrder = false
    }
    private let state = Mutex(State())

    var isOutOfOrder: Bool { state.withLock { $0.isOutOfOrder } }

    func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws {
        try state.withLock { state in
            guard !state.isOutOfOrder, offset == state.size else {
                state.isOutOfOrder = true
                throw OutOfOrder()
            }
            bytes.withUnsafeBytes { state.hasher.update(bufferPointer: $0) }
            state.size += UInt64(bytes.withUnsafeBytes { $0.count })
        }
    }

    /// The length and SHA-256 of everything written, nil when a write came out of order.
    func digest() -> SentContent? {
        state.withLock { state in
            state.isOutOfOrder ? nil : SentContent(size: state.size, sha256: Data(state.hasher.finalize()))
        }
    }
}
