import FileProviderKit
import Foundation
import Synchronization

/// Where the items of a mount that names them by the server's `oc:fileid` are: each identifier's
/// folder and name, so that a folder's rename or move is one change here, whatever it holds.
///
/// The index lives in memory and, when the provider has a state folder, in a journal there that
/// survives restarts: one line per change (`id TAB parent TAB name` for an item seen at a place,
/// `id` alone for one forgotten), each field percent-encoded. A listing appends only the items
/// whose place changed, so re-listing a 100 000-entry folder writes nothing; the journal is
/// rewritten, compactly, only when it is opened holding far more lines than entries.
final class FileIDIndex: Sendable {
    private struct Place: Hashable {
        var parent: ItemIdentifier
        var name: Filename
    }

    private struct State {
        var places: [ItemIdentifier: Place] = [:]
        /// The reverse of `places`: each folder's children by name.
        var children: [ItemIdentifier: [Filename: ItemIdentifier]] = [:]
        /// Journal lines not yet written.
        var pending = ""

        mutating func set(_ identifier: ItemIdentifier, _ place: Place?) {
            if let old = places[identifier], children[old.parent]?[old.name] == identifier {
                children[old.parent]?[old.name] = nil
            }
            places[identifier] = place
            if let place { children[place.parent, default: [:]][place.name] = identifier }
        }
    }

    private let journal: URL?
    private let state: Mutex<State>
    /// Held while lines are appended, so that two flushes write their lines in the order taken.
    private let appending = Mutex(())

    /// Opens the index kept in `directory` (created when missing), or one in memory when nil. Blocks.
    init(directory: URL?) throws {
        guard let directory else {
            journal = nil
            state = Mutex(State())
            return
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let journal = directory.appending(path: "fileids.journal")
        self.journal = journal
        var loaded = State()
        var lines = 0
        if let data = try? Data(contentsOf: journal) {
            for line in data.split(separator: 0x0A) {
                lines += 1
                let fields = line.split(separator: 0x09, omittingEmptySubsequences: false).map {
                    RemotePath.percentDecoded($0)
                }
                guard let id = fields[0] else { continue }
                let identifier = ItemIdentifier(String(decoding: id, as: UTF8.self))
                if fields.count == 3, let parent = fields[1], let name = fields[2] {
                    loaded.set(
                        identifier,
                        Place(
                            parent: ItemIdentifier(String(decoding: parent, as: UTF8.self)), name: Filename(bytes: name)
                        ))
                } else {
                    loaded.set(identifier, nil)
                }
            }
        }
        if lines > 2 * loaded.places.count + 1000 {
            let compact = loaded.places.map { Self.line($0.key, $0.value) }.joined()
            try Data(compact.utf8).write(to: journal, options: .atomic)
        }
        state = Mutex(loaded)
    }

    /// True for a server id that can be an identifier: not a path's (`/…`), not a reserved one.
    static func canName(_ fileID: String) -> Bool {
        !fileID.isEmpty && !fileID.hasPrefix("/") && !fileID.hasPrefix("fpfs.")
    }

    /// Notes that `identifier` is called `name` in the folder `parent`.
    func record(_ identifier: ItemIdentifier, parent: ItemIdentifier, name: Filename) {
        let place = Place(parent: parent, name: name)
        state.withLock { state in
            guard state.places[identifier] != place else { return }
            state.set(identifier, place)
            state.pending += Self.line(identifier, place)
        }
    }

    /// Forgets an identifier whose item is gone or elsewhere.
    func forget(_ identifier: ItemIdentifier) {
        state.withLock { state in
            guard state.places[identifier] != nil else { return }
            state.set(identifier, nil)
            state.pending += Self.encode(identifier.rawValue) + "\n"
        }
    }

    /// The path of `identifier`, by its folders up to the root; nil when a link is unknown.
    func path(of identifier: ItemIdentifier) -> RemotePath? {
        state.withLock { state in
            var names: [Filename] = []
            var current = identifier
            while current != .rootContainer {
                if let path = RemotePath(identifier: current) {
                    return RemotePath(components: path.components + names.reversed())
                }
                guard let place = state.places[current], names.count < 4096 else { return nil }
                names.append(place.name)
                current = place.parent
            }
            return RemotePath(components: names.reversed())
        }
    }

    /// The folder `identifier` was last seen in.
    func parent(of identifier: ItemIdentifier) -> ItemIdentifier? {
        state.withLock { $0.places[identifier]?.parent }
    }

    /// The identifier of the item last seen at `path`; nil when unknown. The root is `rootContainer`.
    func identifier(at path: RemotePath) -> ItemIdentifier? {
        state.withLock { state in
            var current = ItemIdentifier.rootContainer
            for name in path.components {
                guard let child = state.children[current]?[name] else { return nil }
                current = child
            }
            return current
        }
    }

    /// Appends what changed to the journal.
    func flush() async throws {
        guard let journal, state.withLock({ !$0.pending.isEmpty }) else { return }
        try await BlockingIO.run { [self] in
            try appending.withLock { _ in
                let lines = state.withLock { state in
                    defer { state.pending = "" }
                    return state.pending
                }
                if !FileManager.default.fileExists(atPath: journal.path) {
                    _ = FileManager.default.createFile(atPath: journal.path, contents: nil)
                }
                let handle = try FileHandle(forWritingTo: journal)
                defer { try? handle.close() }
                try handle.seekToEnd()
                try handle.write(contentsOf: Data(lines.utf8))
            }
        }
    }

    private static func line(_ identifier: ItemIdentifier, _ place: Place) -> String {
        "\(encode(identifier.rawValue))\t\(encode(place.parent.rawValue))\t\(RemotePath.percentEncoded(place.name.bytes))\n"
    }

    private static func encode(_ text: String) -> String { RemotePath.percentEncoded(Array(text.utf8)) }
}
