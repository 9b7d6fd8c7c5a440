import FileProviderKit
import Foundation
import Synchronization

/// The user metadata of objects (`S3ObjectMetadata`) as the last `GET` or `HEAD` of each found it,
/// by key and ETag, so that listings — which S3 sends without metadata — show the same time, mode
/// and attributes as those answers did, without a `HEAD` per object (DECISIONS 251).
///
/// An entry holds for its ETag only: an object written again (a new ETag) shows the listing's
/// values until it is read. Entries are appended to `metadata.jsonl` in the provider's state
/// folder, so a remount shows what the last one learned; the file is compacted when it loads.
final class S3MetadataMemo: Sendable {
    private struct Entry: Codable, Sendable {
        var key: String
        /// Nil: nothing is known of the key any more (deleted, or without metadata now).
        var etag: String?
        var metadata: S3ObjectMetadata?
    }

    private let entries: Mutex<[String: Entry]>
    private let file: URL?
    /// Serialises appends to `file` (taken on the blocking-I/O queue only, never across an await).
    private let writing = Mutex(())

    init(stateDirectory: URL?) {
        file = stateDirectory?.appending(path: "metadata.jsonl")
        var loaded: [String: Entry] = [:]
        var lines = 0
        if let file, let text = try? String(contentsOf: file, encoding: .utf8) {
            let decoder = JSONDecoder()
            for line in text.split(separator: "\n") {
                lines += 1
                guard let entry = try? decoder.decode(Entry.self, from: Data(line.utf8)) else { continue }
                loaded[entry.key] = entry.etag == nil ? nil : entry
            }
        }
        entries = Mutex(loaded)
        if let file, lines > 2 * loaded.count + 100 {
            let encoder = JSONEncoder()
            let text = loaded.values.compactMap { try? encoder.encode($0) }.map {
                String(decoding: $0, as: UTF8.self) + "\n"
            }.joined()
            try? Data(text.utf8).write(to: file, options: .atomic)
        }
    }

    /// `item` (a file a listing described) with the metadata remembered for its key and ETag.
    func applied(to item: Item) -> Item {
        guard item.kind == .file else { return item }
        let etag = S3Path.etag(of: item.version)
        let metadata = entries.withLock { entries in
            entries[item.identifier.rawValue].flatMap { $0.etag == etag ? $0.metadata : nil }
        }
        return metadata?.applied(to: item) ?? item
    }

    /// What is remembered of the object at `path`, whatever its ETag.
    func known(_ path: S3Path) -> S3ObjectMetadata? {
        entries.withLock { $0[path.relative]?.metadata }
    }

    /// Remembers what an answer about the file `item` said; returns `item` with it applied.
    func learn(_ metadata: S3ObjectMetadata, of item: Item) async -> Item {
        let key = item.identifier.rawValue
        let etag = S3Path.etag(of: item.version)
        // An object without fpfs's metadata (another tool's, most of a big bucket) needs no entry.
        let entry = metadata.isEmpty ? Entry(key: key, etag: nil) : Entry(key: key, etag: etag, metadata: metadata)
        let changed = entries.withLock { entries in
            let old = entries[key]
            if old?.etag == entry.etag, old?.metadata == entry.metadata { return false }
            if entry.etag == nil {
                return entries.removeValue(forKey: key) != nil
            }
            entries[key] = entry
            return true
        }
        if changed { await append(entry) }
        return metadata.applied(to: item)
    }

    /// Forgets the key of a deleted object.
    func forget(_ path: S3Path) async {
        let known = entries.withLock { $0.removeValue(forKey: path.relative) != nil }
        if known { await append(Entry(key: path.relative, etag: nil)) }
    }

    /// Moves what is known of `source` to `target` (a copy keeps an object's metadata and, on a
    /// single-part object, its ETag).
    func move(_ source: S3Path, to target: S3Path) async {
        let moved = entries.withLock { entries -> Entry? in
            guard var entry = entries.removeValue(forKey: source.relative) else { return nil }
            entry.key = target.relative
            entries[target.relative] = entry
            return entry
        }
        if let moved {
            await append(Entry(key: source.relative, etag: nil))
            await append(moved)
        }
    }

    private func append(_ entry: Entry) async {
        guard let file, let data = try? JSONEncoder().encode(entry) else { return }
        let line = data + Data("\n".utf8)
        // Losing a line costs a listing's value until the next read, nothing more: no error reported.
        _ = try? await BlockingIO.run { [self] in
            try writing.withLock { _ in
                if !FileManager.default.fileExists(atPath: file.path) {
                    try FileManager.default.createDirectory(
                        at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                    _ = FileManager.default.createFile(atPath: file.path, contents: nil)
                }
                let handle = try FileHandle(forWritingTo: file)
                defer { try? handle.close() }
                try handle.seekToEnd()
                try handle.write(contentsOf: line)
            }
        }
    }
}
