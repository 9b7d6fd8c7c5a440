import CFallocate
import FileProviderKit
import Foundation
import MetadataStore
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Makes the cache files' bytes durable in epochs rather than by an fsync per commit
/// (DECISIONS 154). A commit records its blocks at once, in the current epoch, and notes the
/// file. Closing an epoch starts the next, fsyncs the files written in it, and records it
/// durable. A killed daemon loses nothing the kernel was given; only a crash of the machine can,
/// and the next mount, seeing another boot id, forgets the blocks of epochs not durable
/// (`MetadataStore.beginDurabilityEpochs`). So a commit never waits for the disk, and the disk is
/// written when the kernel's writeback (or a closing epoch) gets to it, not during every read.
public final class DurabilityEpochs: Sendable {
    private struct State {
        var current: Int64
        /// The files written in the current epoch, by number.
        var written: Set<Int64> = []
    }

    private let state: Mutex<State>
    private let store: MetadataStore
    private let directory: FilePath

    /// Begins the epochs of a mount whose cache lives in `directory`, then asks the store for the
    /// first epoch. Under the boot of the last mount (its daemon was killed, or unmounted), first
    /// flushes the cache folder's filesystem, so that every byte that mount wrote is durable.
    /// Returns how many contents lost their blocks to a crash of the machine, too.
    static func begin(directory: FilePath, store: MetadataStore, bootID: String) async throws -> (
        DurabilityEpochs, forgottenContents: Int
    ) {
        if try await store.durabilityBootID() == bootID {
            try await BlockingIO.run {
                let folder = try FileDescriptor.open(directory, .readOnly, options: [.directory, .closeOnExec])
                defer { try? folder.close() }
                guard syncfs(folder.rawValue) == 0 else { throw Errno(rawValue: errno) }
            }
        }
        let (epoch, forgotten) = try await store.beginDurabilityEpochs(bootID: bootID)
        return (DurabilityEpochs(epoch: epoch, store: store, directory: directory), forgotten)
    }

    private init(epoch: Int64, store: MetadataStore, directory: FilePath) {
        self.state = Mutex(State(current: epoch))
        self.store = store
        self.directory = directory
    }

    /// The epoch to record blocks of cache file `fileNumber` in, whose bytes are written: the file
    /// is fsynced before that epoch is recorded durable.
    func enter(fileNumber: Int64) -> Int64 {
        state.withLock { state in
            state.written.insert(fileNumber)
            return state.current
        }
    }

    /// Ends the current epoch (the caller runs one at a time) when blocks were recorded in it:
    /// blocks are recorded in the next from now on, and the files written in this one are
    /// fsynced. Returns the epoch, to be recorded durable (`markDurable`) once the caller has
    /// forgotten the files whose fsync failed (also returned: their bytes may not be on disk). A
    /// file deleted meanwhile (evicted, or replaced by a new version) has no row left to trust.
    /// Nil, having written nothing, when nothing was recorded: an idle mount leaves the store
    /// alone.
    func flush() async throws -> (epoch: Int64, failed: Set<Int64>)? {
        guard !state.withLock({ $0.written.isEmpty }) else { return nil }
        let next = try await store.advanceDurabilityEpoch()
        let (closing, written) = state.withLock { state in
            defer {
                state.current = next
                state.written = []
            }
            return (state.current, state.written)
        }
        let directory = self.directory
        let failed = try await BlockingIO.run {
            written.filter { fileNumber in
                let path = directory.appending(String(fileNumber))
                do {
                    let file = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec])
                    defer { try? file.close() }
                    return fsync(file.rawValue) != 0
                } catch let error as Errno {
                    return error != .noSuchFileOrDirectory
                } catch {
                    return true
                }
            }
        }
        return (closing, failed)
    }

    /// Records `epoch`, and every earlier one, durable.
    func markDurable(_ epoch: Int64) async throws {
        try await store.markDurable(through: epoch)
    }

    /// The kernel's id of this boot, which a crash of the machine changes. Where it cannot be
    /// read, every mount counts as after a crash.
    public static func currentBootID() -> String {
        let id = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
        return id?.trimmingCharacters(in: .whitespacesAndNewlines) ?? UUID().uuidString
    }
}
