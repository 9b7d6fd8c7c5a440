import FileProviderKit
import Foundation

/// The journal of folder renames under way: a rename copies every key under the old prefix and
/// then deletes them, many requests; each move is noted in the state folder
/// (`folder-moves/ID`, the two paths) before its first copy and forgotten after its last delete,
/// so that the first root lookup of the next mount finishes one a kill -9 cut off — nothing lost
/// (a key is deleted only once copied) and nothing left twice (the move runs to its end).
struct S3FolderMoves {
    let provider: S3Provider

    private var directory: URL? {
        provider.client.configuration.stateDirectory?.appending(path: "folder-moves")
    }

    /// Notes a move; returns its entry, for `forget`. Without a state folder, nothing is noted.
    func note(_ source: S3Path, to target: S3Path) async throws -> URL? {
        guard let directory else { return nil }
        let entry = directory.appending(path: UUID().uuidString)
        let data = try JSONEncoder().encode([source.relative, target.relative])
        try await BlockingIO.run {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try data.write(to: entry, options: .atomic)
        }
        return entry
    }

    func forget(_ entry: URL?) async {
        guard let entry else { return }
        _ = try? await BlockingIO.run { try FileManager.default.removeItem(at: entry) }
    }

    /// Finishes every noted move; a move that fails stays noted for the next mount.
    func finishInterrupted() async {
        guard let directory else { return }
        let entries: [(URL, [String])] =
            (try? await BlockingIO.run {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
                return names.compactMap { name in
                    let entry = directory.appending(path: name)
                    guard let data = try? Data(contentsOf: entry),
                        let paths = try? JSONDecoder().decode([String].self, from: data), paths.count == 2
                    else { return nil }
                    return (entry, paths)
                }
            }) ?? []
        for (entry, paths) in entries {
            let (source, target) = (S3Path(relative: paths[0]), S3Path(relative: paths[1]))
            guard source.isFolder, target.isFolder, !source.isRoot, !target.isRoot else { continue }
            do {
                try await provider.moveFolder(source, to: target, resuming: true)
            } catch ProviderError.noSuchItem {
                // Neither prefix holds anything: nothing is left to move.
            } catch {
                continue
            }
            await forget(entry)
        }
    }
}
