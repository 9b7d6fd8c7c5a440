import FileProviderKit
import FuseKit
import Logging
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Decides, per open, whether the kernel reads a file's cache file itself (FUSE passthrough)
/// instead of sending the daemon a request per read, and keeps the kernel's rules while doing so.
///
/// A read-only handle of a file whose bytes are all here gets a backing file: a complete cache
/// file of the version it opens, or the local content of a file written here. So does a writer
/// alone on its inode (a creation, or an open for writing that `openWriter` and `settle` let
/// through), whose contents the journal holds from its open on or whose open left a mark
/// (`FileSystem.markWriter`): the kernel writes its local content. The daemon has nothing to do
/// for their reads and writes. The kernel then holds each inode in one of two modes: while
/// some handle has a backing file, every other open of the inode must name the same one (or fail
/// with EIO); while a handle without one is open, an open with one fails. So every open and
/// release of a file goes through here, and:
///
/// - the first open of an inode with nothing else open may pass through;
/// - later read-only opens of the same file pass through with the same backing file;
/// - any other open of an inode that passes through (for writing, or of a newer version) names
///   the backing file with direct I/O: its reads and writes still come to the daemon, and only
///   its memory maps use the backing file. A writer's local content is then made the backing
///   file itself (`FileSystem.makeLocal`), so that both see the same bytes;
/// - while handles without a backing file are open, nothing passes through.
///
/// The kernel lets go of an inode's mode when a handle closes, before the daemon hears of the
/// release, so the daemon's view here is the more cautious one.
///
/// A file read through requests with the page cache leaves its bytes in the mount's page cache.
/// Passing such a file through would read the cache file again while the kernel holds a copy in
/// memory, so an inode that had such a handle does not pass through until the kernel forgets it
/// (and so its pages). A handle with direct I/O (a large file, DECISIONS 155) leaves nothing
/// there, and does not count.
final class PassthroughFiles: Sendable {
    /// How one handle was opened.
    enum Opening: Sendable, Equatable {
        /// Reads come to the daemon.
        case requests
        /// The kernel reads the backing file.
        case passthrough(BackingID)
        /// Reads and writes come to the daemon; memory maps use the inode's backing file.
        case directIO(BackingID)

        var backing: BackingID? {
            switch self {
            case .requests: nil
            case .passthrough(let id), .directIO(let id): id
            }
        }

        /// Whether the kernel reads (and writes) this handle's backing file itself.
        var passesThrough: Bool {
            if case .passthrough = self { true } else { false }
        }
    }

    /// The file a backing file is: a version's complete cache file, or the inode's local content.
    enum Content: Hashable {
        case cached(ItemIdentifier, contentVersion: [UInt8])
        case local
    }

    /// A file whose bytes are all on this machine, which a handle could pass through to.
    struct Candidate {
        let file: FileDescriptor
        let content: Content

        /// The local content open as `local`.
        static func local(_ local: LocalFile) -> Candidate {
            Candidate(file: FileDescriptor(rawValue: local.fileDescriptor), content: .local)
        }
    }

    /// What the kernel holds for one inode with open handles.
    private enum InodeMode {
        case requests(handles: Int)
        case passthrough(BackingID, Content, handles: Int)
    }

    private struct State {
        /// Where backing files are registered; nil once the kernel refused one.
        var registry: (any BackingFileRegistry)?
        /// The registry attached, kept after a refusal: it also says what the kernel agreed to.
        var attached: (any BackingFileRegistry)?
        var inodes: [UInt64: InodeMode] = [:]
        /// Inodes that had a handle without a backing file since the kernel last forgot them.
        var pagesInKernel: Set<UInt64> = []
        /// Inodes whose one handle, a writer, waits for its local content (`openWriter`).
        var settling: Set<UInt64> = []
        /// Local contents the kernel writes for a passthrough writer, by inode: the writer's
        /// descriptor to read their size and time from, and the time the daemon last saw. One
        /// writer at most per inode: only a writer alone on its inode writes through the kernel.
        var written: [UInt64: (descriptor: FileDescriptor, seenModification: Timestamp)] = [:]
    }

    private let state = Mutex(State())
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// Lets handles pass through from now on, with backing files registered in `registry`.
    func attach(_ registry: any BackingFileRegistry) {
        state.withLock {
            $0.registry = registry
            $0.attached = registry
        }
    }

    /// Whether the kernel maps handles opened with direct I/O shared (so that they may be used
    /// for files whose `mmap` would otherwise fail).
    var mapsDirectIOFiles: Bool { state.withLock { $0.attached?.mapsDirectIOFiles ?? false } }

    /// How a new handle of `inode` opens: through `candidate` when it may, else by requests or
    /// with direct I/O as the inode's mode demands. `cachesPages`: a handle opened by requests
    /// keeps what it reads in the mount's page cache (it is not opened with direct I/O). Every
    /// opening needs its `release`.
    func open(inode: UInt64, candidate: Candidate?, cachesPages: Bool = true) -> Opening {
        state.withLock { state in
            switch state.inodes[inode] {
            case .requests(let handles):
                state.inodes[inode] = .requests(handles: handles + 1)
                if cachesPages { state.pagesInKernel.insert(inode) }
                return .requests
            case .passthrough(let id, let content, let handles):
                state.inodes[inode] = .passthrough(id, content, handles: handles + 1)
                return candidate?.content == content ? .passthrough(id) : .directIO(id)
            case nil:
                if let candidate, !state.pagesInKernel.contains(inode), let id = register(candidate.file, in: &state) {
                    state.inodes[inode] = .passthrough(id, candidate.content, handles: 1)
                    return .passthrough(id)
                }
                state.inodes[inode] = .requests(handles: 1)
                if cachesPages { state.pagesInKernel.insert(inode) }
                return .requests
            }
        }
    }

    /// How a writer of `inode` opens before its local content is ready: as `open`
    /// without a candidate, except that a writer alone on an inode the kernel holds no pages of
    /// is held open by requests until `settle` says whether it passes through after all.
    func openWriter(inode: UInt64) -> Opening {
        let alone = state.withLock { state in
            guard state.inodes[inode] == nil, !state.pagesInKernel.contains(inode) else { return false }
            state.inodes[inode] = .requests(handles: 1)
            state.settling.insert(inode)
            return true
        }
        return alone ? .requests : open(inode: inode, candidate: nil)
    }

    /// Ends the wait `openWriter` began: the writer passes through to `candidate` (its local
    /// content, now ready) if it is still the inode's only handle and no other handle came and
    /// went meanwhile; otherwise it keeps `opening`.
    func settle(inode: UInt64, _ opening: Opening, candidate: Candidate) -> Opening {
        state.withLock { state in
            guard state.settling.remove(inode) != nil else { return opening }
            if case .requests(handles: 1) = state.inodes[inode], !state.pagesInKernel.contains(inode),
                let id = register(candidate.file, in: &state)
            {
                state.inodes[inode] = .passthrough(id, candidate.content, handles: 1)
                return .passthrough(id)
            }
            state.pagesInKernel.insert(inode)
            return opening
        }
    }

    /// The file the kernel reads for `inode`'s passthrough handles, if it has any.
    func backing(of inode: UInt64) -> Content? {
        state.withLock { state in
            guard case .passthrough(_, let content, _) = state.inodes[inode] else { return nil }
            return content
        }
    }

    /// A writer of `inode` passes through: the kernel writes `local` (its local content, open as
    /// long as the writer is) without telling the daemon, so its size and time come from there.
    func startWriting(_ inode: UInt64, local: FileDescriptor) {
        let modification = Self.status(of: local).map(\.modification) ?? .now
        state.withLock { $0.written[inode] = (local, modification) }
    }

    /// The writer that passed through is gone.
    func stopWriting(_ inode: UInt64) {
        state.withLock { _ = $0.written.removeValue(forKey: inode) }
    }

    /// The size of `inode`'s content as the kernel wrote it, and its modification time when the
    /// kernel wrote since the daemon last saw (`seen`); nil while no writer passes through.
    /// With `seen`, the time read now counts as seen.
    func writtenStatus(of inode: UInt64, seen: Bool = false) -> (size: UInt64, modification: Timestamp?)? {
        state.withLock { state in
            guard let written = state.written[inode], let status = Self.status(of: written.descriptor) else {
                return nil
            }
            let modified = status.modification != written.seenModification ? status.modification : nil
            if seen { state.written[inode] = (written.descriptor, status.modification) }
            return (status.size, modified)
        }
    }

    /// `fstat` of an open local content: brief, as the file is open and on a local disk.
    private static func status(of file: FileDescriptor) -> (size: UInt64, modification: Timestamp)? {
        var status = stat()
        guard fstat(file.rawValue, &status) == 0 else { return nil }
        return (UInt64(status.st_size), Timestamp(status.st_mtim))
    }

    /// The kernel forgot `inode`, and with it every page it cached of the file.
    func kernelForgot(_ inode: UInt64) {
        state.withLock { _ = $0.pagesInKernel.remove(inode) }
    }

    /// Ends a handle opened with `opening`; the inode's last handle forgets its backing file.
    func release(inode: UInt64, _ opening: Opening) {
        let unused = state.withLock { state -> BackingID? in
            switch state.inodes[inode] {
            case .requests(let handles):
                state.inodes[inode] = handles > 1 ? .requests(handles: handles - 1) : nil
                if handles == 1 { state.settling.remove(inode) }
                return nil
            case .passthrough(let id, let content, let handles):
                guard handles == 1 else {
                    state.inodes[inode] = .passthrough(id, content, handles: handles - 1)
                    return nil
                }
                state.inodes[inode] = nil
                return id
            case nil:
                return nil
            }
        }
        guard let unused else { return }
        state.withLock { $0.registry }?.unregister(unused)
    }

    /// Registers `file`; on the first refusal other than "no passthrough on this mount" logs why
    /// and stops trying, since the reason (privileges, the cache folder's filesystem) stays.
    private func register(_ file: FileDescriptor, in state: inout State) -> BackingID? {
        guard let registry = state.registry else { return nil }
        do {
            return try registry.register(file)
        } catch {
            state.registry = nil
            if error != .notSupported {
                logger.notice("the kernel refused a backing file (\(error)); reads go through the daemon")
            }
            return nil
        }
    }
}
