import FileProviderKit
import MetadataStore

/// How log lines name items: by the path from the mount's root the user knows (`docs/a.txt`,
/// `/` for the root), not by the remote's identifier or an inode number, which name nothing a user
/// can find; the identifier stands in only for an item the store no longer knows (DECISIONS 242).
/// Neither throws: the line about a failure must not fail in turn.
extension MetadataStore {
    func logName(of identifier: ItemIdentifier) async -> String {
        Self.logName(path: await uncancelled { try await $0.path(identifier: identifier) }) ?? "the item \(identifier)"
    }

    func logName(inode: UInt64) async -> String {
        Self.logName(path: await uncancelled { try await $0.path(inode: inode) }) ?? "inode \(inode)"
    }

    /// The entry `name` in the folder `inode` (by the name alone if the store lost the folder).
    func logName(of name: [UInt8], inFolder inode: UInt64) async -> String {
        Self.entry(name, in: await uncancelled { try await $0.path(inode: inode) })
    }

    /// The entry `name` in the folder `folder`.
    func logName(of name: [UInt8], inFolder folder: ItemIdentifier) async -> String {
        Self.entry(name, in: await uncancelled { try await $0.path(identifier: folder) })
    }

    /// A path read in a task of its own, nil if it cannot be read: the store refuses the reads of
    /// a cancelled task, and a failure met while the daemon stops (its tasks cancelled) was
    /// logged as "inode 6" rather than by its path (CI, FaultTests; DECISIONS 313).
    private func uncancelled(_ read: @escaping @Sendable (MetadataStore) async throws -> String?) async -> String? {
        await Task { (try? await read(self)) ?? nil }.value
    }

    /// A deletion's item, whose path the journal kept when it was deleted here.
    static func logName(of deletion: PendingDeletion) -> String {
        logName(path: deletion.path).map { "\($0) (\(deletion.identifier))" } ?? "the item \(deletion.identifier)"
    }

    private static func logName(path: String?) -> String? { path.map { $0.isEmpty ? "/" : $0 } }

    private static func entry(_ name: [UInt8], in folder: String?) -> String {
        let name = String(decoding: name, as: UTF8.self)
        guard let folder, !folder.isEmpty else { return name }
        return folder + "/" + name
    }
}
