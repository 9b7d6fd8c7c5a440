import Crypto
import FileProviderKit
import Foundation
import Synchronization

/// Sync anchors that carry a server's `sync-token`: `sync-token:` and the token, or — for a token
/// too long for the 500 bytes an anchor may hold — `sync-token-file:` and the SHA-256 of the token,
/// which names a file in the state folder that holds it (in memory without one). The prefixes tell
/// these anchors from `WalkHistory`'s (which begin with a UUID), so an anchor of one method is never
/// taken for one of the other: it gets `syncAnchorExpired`.
final class SyncTokenAnchors: Sendable {
    private static let inline = "sync-token:"
    private static let stored = "sync-token-file:"
    /// How many long tokens are kept; an anchor naming an older one has expired.
    static let retained = 16

    private let directory: URL?
    private let remembered = Mutex<[String: String]>([:])

    /// Keeps long tokens in `directory` (created when missing), or in memory when nil. Blocks.
    init(directory: URL?) throws {
        self.directory = directory
        if let directory { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
    }

    func anchor(for token: String) async throws -> SyncAnchor {
        if let anchor = try? SyncAnchor(Self.inline + token) { return anchor }
        let name = SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
        if let directory {
            try await BlockingIO.run {
                try Data(token.utf8).write(to: directory.appending(path: name), options: .atomic)
                let files = try FileManager.default.contentsOfDirectory(
                    at: directory, includingPropertiesForKeys: [.contentModificationDateKey])
                let byAge = files.map { file in
                    let values = try? file.resourceValues(forKeys: [.contentModificationDateKey])
                    return (file, values?.contentModificationDate ?? .distantPast)
                }.sorted { $0.1 > $1.1 }.map(\.0)
                for old in byAge.dropFirst(Self.retained) { try? FileManager.default.removeItem(at: old) }
            }
        } else {
            remembered.withLock { $0[name] = token }
        }
        return try SyncAnchor(Self.stored + name)
    }

    /// The token `anchor` carries; `syncAnchorExpired` for an anchor of another kind or a token
    /// no longer kept.
    func token(in anchor: SyncAnchor) async throws -> String {
        let text = String(decoding: anchor.bytes, as: UTF8.self)
        if text.hasPrefix(Self.inline) { return String(text.dropFirst(Self.inline.count)) }
        let name = String(text.dropFirst(Self.stored.count))
        guard text.hasPrefix(Self.stored), name.count == 64, name.allSatisfy(\.isHexDigit) else {
            throw ProviderError.syncAnchorExpired
        }
        guard let directory else {
            guard let token = remembered.withLock({ $0[name] }) else { throw ProviderError.syncAnchorExpired }
            return token
        }
        let file = directory.appending(path: name)
        guard let data = try await BlockingIO.run({ try? Data(contentsOf: file) }) else {
            throw ProviderError.syncAnchorExpired
        }
        return String(decoding: data, as: UTF8.self)
    }
}
