import FileProviderKit
import Foundation

/// A folder on this machine presented as a remote: the embedded default of
/// `fpfs mount /some/folder /mnt`, and the reference provider the engine is tested against.
///
/// Identifiers follow inodes, so they survive renames done on disk (see `LocalTree`); versions
/// derive from `statx`; change enumeration compares walks of the tree with saved snapshots (see
/// `WalkHistory`). Every file-system call runs on a Dispatch queue (`BlockingIO`), never on a
/// cooperative thread. `Options` can make it as slow as a real remote.
public final class LocalProvider: FileProvider, PartialContentFetching, FeatureDescribing, Sendable {
    /// The options the provider was opened with, for status displays.
    public let options: Options
    let tree: LocalTree
    let history: WalkHistory
    let bandwidthLimiter: BandwidthLimiter?

    /// Presents the folder at `root`. Throws `cannotSynchronize` naming the path when there is no
    /// folder there, and when the options are invalid or the state directory cannot be opened.
    /// Blocks briefly; call it at start-up, not from a latency-sensitive task.
    public init(root: URL, options: Options = Options()) throws {
        if options.bandwidthLimit == 0 {
            throw ProviderError.cannotSynchronize(reason: "the bandwidth limit must be at least 1 byte per second")
        }
        self.options = options
        tree = try LocalTree(root: Array(root.path(percentEncoded: false).utf8))
        do {
            history = try WalkHistory(directory: options.stateDirectory)
        } catch {
            let path = options.stateDirectory?.path(percentEncoded: false) ?? ""
            throw ProviderError.cannotSynchronize(reason: "cannot use state directory \(path): \(error)")
        }
        bandwidthLimiter = options.bandwidthLimit.map(BandwidthLimiter.init(bytesPerSecond:))
    }

    /// The item as it is on disk now, found again by a walk if it was renamed behind our back.
    public func item(for identifier: ItemIdentifier) async throws -> Item {
        guard identifier != .workingSet, identifier != .trashContainer else {
            throw ProviderError.noSuchItem(identifier)
        }
        return try await request { tree in try tree.item(at: tree.locate(identifier).path) }
    }

    /// A paged lister for a folder, or the working-set enumerator that reports changes; there is
    /// no trash (`featureUnsupported`), and a file cannot be listed (`cannotSynchronize`).
    public func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator {
        switch container {
        case .workingSet:
            return WalkHistoryEnumerator(history: history) { [self] in try await request { tree in try tree.walk() } }
        case .trashContainer:
            throw ProviderError.featureUnsupported
        default:
            try await request { tree in
                let folder = try tree.locate(container)
                guard folder.status.kind == .directory else {
                    throw ProviderError.cannotSynchronize(reason: "\(folder.path) is not a folder")
                }
            }
            return DirectoryEnumerator(provider: self, container: container)
        }
    }

    /// A folder holds symlinks, and has a trash (`FolderTrash`).
    public var features: ProviderFeatures { .all }

    /// Any name Linux allows, but the root's trash folder, which the mount does not show.
    public func reasonItCannotHold(name: Filename, in parent: ItemIdentifier) -> String? {
        parent == .rootContainer && name == FolderTrash.folderName ? "the remote folder keeps its trash there" : nil
    }

    /// Nothing to do: snapshots are saved as they are taken, and nothing else is held open.
    public func invalidate() async {}

    /// Runs one request: waits the configured delay, then runs `work` on the blocking-I/O queue
    /// after checking that the root folder is still there, and turns system errors into
    /// `ProviderError`s (`serverUnreachable` when the root has vanished meanwhile).
    func request<Result: Sendable>(_ work: @escaping @Sendable (LocalTree) throws -> Result) async throws -> Result {
        if options.requestDelay > .zero { try await Task.sleep(for: options.requestDelay) }
        return try await blocking(work)
    }

    /// Blocking work on a file already open, without `checkRoot`: the descriptor reads the file it
    /// opened whatever happens to the root meanwhile, so a fetch whose bytes are read does not fail
    /// because the root went away right after (its readers may already have been given them).
    func onOpenFile<Result: Sendable>(_ work: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await BlockingIO.run {
            do {
                return try work()
            } catch let failure as POSIXFailure {
                throw failure.providerError
            }
        }
    }

    /// `request` without the delay, for the later steps of a request that already waited.
    func blocking<Result: Sendable>(_ work: @escaping @Sendable (LocalTree) throws -> Result) async throws -> Result {
        let tree = tree
        return try await BlockingIO.run {
            do {
                try tree.checkRoot()
                return try work(tree)
            } catch let failure as POSIXFailure {
                if failure.mayMeanRootVanished { try tree.checkRoot() }
                throw failure.providerError
            }
        }
    }
}
