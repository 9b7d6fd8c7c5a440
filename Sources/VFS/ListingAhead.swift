import FileProviderKit
import Logging
import Synchronization

/// Lists folders ahead of a tree walk (`ls -R`, `find`, `du`), the way read-ahead reads bytes
/// ahead of a sequential reader.
///
/// A walker opens a folder, then its subfolders one after the other, and waits for each listing
/// in turn: a round trip and the server's work per folder, with the daemon idle. When the kernel
/// opens a folder, the next few of its siblings that are not listed yet, and its own first few
/// subfolders, are listed in the background, at most `depth` at a time; the walker's own request
/// for one of them then joins that listing or finds it done (DirectoryLister). Only what the
/// kernel opens moves the window: a folder listed ahead starts nothing of its own, so an `ls`
/// of one folder lists at most `depth` of its subfolders and `depth` of the folders after it.
final class ListingAhead: Sendable {
    private let lister: DirectoryLister
    private let depth: Int
    private let logger: Logger

    /// The subfolders of an opened folder, in listing order, and which of them was opened last.
    private struct Walk {
        let subfolders: [ItemIdentifier]
        var last = 0

        /// Where `folder` is among the subfolders. A walk opens them in order, so the search
        /// starts just after the last one opened: a folder of many subfolders costs no scan per
        /// opendir.
        mutating func index(of folder: ItemIdentifier) -> Int? {
            for candidate in [last + 1, last] where subfolders.indices.contains(candidate) {
                if subfolders[candidate] == folder {
                    last = candidate
                    return candidate
                }
            }
            guard let found = subfolders.firstIndex(of: folder) else { return nil }
            last = found
            return found
        }
    }

    private struct State {
        /// The walks of recently opened folders, by folder; the oldest are dropped beyond
        /// `rememberedFolders`.
        var walks: [ItemIdentifier: Walk] = [:]
        var remembered: [ItemIdentifier] = []
        /// Folders waiting for a slot, first to list first.
        var waiting: [ItemIdentifier] = []
        var running: [ItemIdentifier: Task<Void, Never>] = [:]
        var stopped = false
    }
    private let state = Mutex(State())

    /// How many opened folders' subfolder lists are kept: a walk needs its path's, a few levels.
    private static let rememberedFolders = 64

    /// `depth` is how many listings ahead run at once and how far ahead a walk is followed;
    /// 0 turns listing ahead off.
    init(lister: DirectoryLister, depth: Int, logger: Logger) {
        self.lister = lister
        self.depth = depth
        self.logger = logger
    }

    /// The kernel opened `folder` (in `parent`), whose subfolders are `subfolders` in listing
    /// order: lists ahead the siblings after it and its own first subfolders.
    func opened(_ folder: ItemIdentifier, in parent: ItemIdentifier, subfolders: [ItemIdentifier]) {
        guard depth > 0 else { return }
        let candidates = state.withLock { state -> [ItemIdentifier] in
            guard !state.stopped else { return [] }
            var candidates: [ItemIdentifier] = []
            if let index = state.walks[parent]?.index(of: folder), let siblings = state.walks[parent]?.subfolders {
                candidates += siblings[(index + 1)...].prefix(depth)
            }
            candidates += subfolders.prefix(depth)
            if !subfolders.isEmpty, state.walks.updateValue(Walk(subfolders: subfolders), forKey: folder) == nil {
                state.remembered.append(folder)
                if state.remembered.count > Self.rememberedFolders {
                    state.walks[state.remembered.removeFirst()] = nil
                }
            }
            return candidates
        }
        let wanted = candidates.filter { !lister.isKnownComplete($0) }
        guard !wanted.isEmpty else { return }
        state.withLock { state in
            for folder in wanted where state.running[folder] == nil && !state.waiting.contains(folder) {
                state.waiting.append(folder)
            }
            // The walk has moved on from what waited longest.
            if state.waiting.count > 2 * depth { state.waiting.removeFirst(state.waiting.count - 2 * depth) }
        }
        startWaiting()
    }

    /// Stops listing ahead and waits for the listings running to end (each is bounded by the
    /// remote bound), so that none writes to the store after the mount is gone.
    func stop() async {
        let running = state.withLock { state in
            state.stopped = true
            state.waiting = []
            return Array(state.running.values)
        }
        for task in running { await task.value }
    }

    /// Starts waiting listings while fewer than `depth` run.
    private func startWaiting() {
        state.withLock { state in
            while !state.stopped, state.running.count < depth, !state.waiting.isEmpty {
                let folder = state.waiting.removeFirst()
                guard state.running[folder] == nil else { continue }
                state.running[folder] = Task { await self.list(folder) }
            }
        }
    }

    private func list(_ folder: ItemIdentifier) async {
        do {
            try await lister.ensureListed(folder)
        } catch {
            // The walker's own request lists it again and answers with the error, if it recurs.
            logger.debug("listing \(folder) ahead failed: \(error)")
        }
        state.withLock { _ = $0.running.removeValue(forKey: folder) }
        startWaiting()
    }
}
