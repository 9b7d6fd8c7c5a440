import FileProviderKit
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Nameless files (`O_TMPFILE`) in the local folder, made ahead so that a create takes one
/// instead of allocating an inode on its request's path (DECISIONS 156). The stock fills from
/// the first create on, in the background, whenever it falls to half; a mount that creates
/// nothing makes none. A file left unnamed vanishes when its descriptor closes. Each refill runs
/// on a thread of its own, which starts at once whatever Dispatch's pools are doing: a slow
/// disk's refill holds none of their threads, and waits behind none of their blocked calls.
final class NamelessFiles: Sendable {
    private struct State {
        var ready: [FileDescriptor] = []
        var refilling = false
        /// The disk cannot make nameless files, or the folder is closed: nothing more is made.
        var stopped = false
    }

    private let directory: FilePath
    private let stock: Int
    private let state = Mutex(State())

    init(in directory: FilePath, stock: Int = 32) {
        self.directory = directory
        self.stock = stock
    }

    /// How many files are made ahead and not taken yet.
    var readyCount: Int { state.withLock { $0.ready.count } }

    /// A nameless file for a new item: one made ahead, or one made now when none is ready. Nil
    /// where the disk cannot make them.
    func take() async -> FileDescriptor? {
        let taken = state.withLock { state -> (file: FileDescriptor?, refill: Bool, stopped: Bool) in
            let file = state.ready.popLast()
            let refill = !state.stopped && !state.refilling && state.ready.count <= stock / 2
            if refill { state.refilling = true }
            return (file, refill, state.stopped)
        }
        if taken.refill { Thread { self.refill() }.start() }
        if let file = taken.file { return file }
        guard !taken.stopped else { return nil }
        return try? await BlockingIO.run { [directory] in try Self.make(in: directory) }
    }

    /// Closes the files made ahead (they vanish) and makes no more: at unmount.
    func close() {
        let ready = state.withLock { state in
            state.stopped = true
            defer { state.ready = [] }
            return state.ready
        }
        for file in ready { try? file.close() }
    }

    /// Makes files until the stock is full, on a thread of its own. The refill ends in the
    /// same critical section that finds the stock full, so a take just after starts the next.
    private func refill() {
        while state.withLock({ state in
            guard !state.stopped, state.ready.count < stock else {
                state.refilling = false
                return false
            }
            return true
        }) {
            let made: FileDescriptor
            do { made = try Self.make(in: directory) } catch {
                // EOPNOTSUPP, EISDIR and the like say the disk has no nameless files; a full disk
                // or a lack of descriptors may pass, and the next create tries again.
                let lasting = [EOPNOTSUPP, EISDIR, EINVAL].contains((error as? Errno)?.rawValue)
                state.withLock { state in
                    state.refilling = false
                    if lasting { state.stopped = true }
                }
                return
            }
            let kept = state.withLock { state in
                guard !state.stopped else { return false }
                state.ready.append(made)
                return true
            }
            if !kept { try? made.close() }
        }
    }

    private static func make(in directory: FilePath) throws -> FileDescriptor {
        let descriptor = open(directory.string, nameless | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Errno(rawValue: errno) }
        return FileDescriptor(rawValue: descriptor)
    }

    /// `O_TMPFILE`, which Swift's Glibc module does not import: the generic `__O_TMPFILE` bit
    /// (the same on every Linux architecture Swift runs on) with `O_DIRECTORY`.
    private static let nameless: Int32 = 0o20_000_000 | O_DIRECTORY
}
