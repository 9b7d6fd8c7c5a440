import FileProviderKit
import Foundation
import Synchronization

/// A complete remote held in memory, for engine tests: it keeps the whole contract (paging, change
/// enumeration, partial and incremental fetches, the write half with conflicts) and records every
/// call in `recorder`, so tests can drive the engine against a remote they fully control and then
/// assert on what the engine asked of it.
///
/// Tests shape the remote with the builder methods (`addFile`, `setContents`, `move`, `remove`…),
/// which act like changes made by another client: they bump versions and enter the change log
/// without being recorded as calls.
public final class InMemoryProvider: PartialContentFetching, IncrementalContentFetching {
    /// Knobs that make the remote behave like slower, smaller or simpler ones.
    public struct Configuration: Sendable {
        /// Items per page whatever the engine suggests (kept within the contract's 100 × the
        /// suggestion); nil follows the suggestion.
        public var pageSize: Int?
        /// How long each content fetch waits before writing, while it counts as in flight: lets
        /// tests observe concurrency and cancel fetches midway.
        public var fetchDelay: Duration?
        /// Bytes per sink write, so readers see a fetch land piece by piece.
        public var writeChunkSize: Int
        /// True writes through the sink's non-suspending `write(_:at:resume:)`, as a provider
        /// receiving on a network event loop does, waiting only when the sink holds it back.
        public var writesWithoutSuspending: Bool
        /// False makes `enumerateChanges` throw `featureUnsupported`, as remotes without a change
        /// feed do.
        public var supportsChangeEnumeration: Bool
        /// Keep at most this many changes; older sync anchors expire (nil keeps every change).
        public var changeLogLimit: Int?

        public init(
            pageSize: Int? = nil, fetchDelay: Duration? = nil, writeChunkSize: Int = 64 * 1024,
            writesWithoutSuspending: Bool = false, supportsChangeEnumeration: Bool = true, changeLogLimit: Int? = nil
        ) {
            self.pageSize = pageSize
            self.fetchDelay = fetchDelay
            self.writeChunkSize = writeChunkSize
            self.writesWithoutSuspending = writesWithoutSuspending
            self.supportsChangeEnumeration = supportsChangeEnumeration
            self.changeLogLimit = changeLogLimit
        }
    }

    /// What the builder adds: the item's kind with its content.
    public enum Entry: Sendable, Hashable {
        case file([UInt8])
        case directory
        case symlink(target: [UInt8])
    }

    private let tree = Mutex(RemoteTree())
    private let settings: Mutex<Configuration>
    /// Every call the provider received, with byte and concurrency counts.
    public let recorder = CallRecorder()
    /// Whether content fetches are held, and the fetches waiting for the release.
    private let hold = Mutex<(isHeld: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    public init(configuration: Configuration = Configuration()) {
        settings = Mutex(configuration)
        tree.withLock { $0.changeLogLimit = configuration.changeLogLimit }
    }

    /// The current knobs; setting them takes effect for the next call.
    public var configuration: Configuration {
        get { settings.withLock { $0 } }
        set {
            settings.withLock { $0 = newValue }
            tree.withLock { $0.changeLogLimit = newValue.changeLogLimit }
        }
    }

    /// Makes content fetches wait, counted in flight, from now until `releaseFetches()`: a test
    /// can then see how many fetches the engine runs at once however slowly its tasks are
    /// scheduled, which a delay cannot promise.
    public func holdFetches() { hold.withLock { $0.isHeld = true } }

    /// Lets the held fetches go on, and those that start later run at once.
    public func releaseFetches() {
        let waiters = hold.withLock { hold in
            defer { hold = (false, []) }
            return hold.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once fetches are not held.
    func waitWhileFetchesHeld() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let goOn = hold.withLock { hold in
                if hold.isHeld { hold.waiters.append(continuation) }
                return !hold.isHeld
            }
            if goOn { continuation.resume() }
        }
    }

    // MARK: Shaping the remote

    /// Adds an item named by bytes (for names that are not UTF-8) under an existing directory.
    @discardableResult
    public func add(_ entry: Entry, named name: Filename, in parent: ItemIdentifier) throws -> Item {
        try withTree { tree throws(ProviderError) in try Self.insert(entry, named: name, in: parent, into: &tree) }
    }

    /// Adds a file at a slash-separated path, creating missing directories on the way.
    @discardableResult
    public func addFile(path: String, contents: [UInt8] = []) throws -> Item {
        try add(.file(contents), atPath: path)
    }

    /// Adds a file whose contents are the UTF-8 of `text`.
    @discardableResult
    public func addFile(path: String, text: String) throws -> Item {
        try add(.file(Array(text.utf8)), atPath: path)
    }

    /// Adds a directory at a path, creating missing parents (like `mkdir -p`, but a taken name throws).
    @discardableResult
    public func addDirectory(path: String) throws -> Item { try add(.directory, atPath: path) }

    /// Adds a symbolic link pointing at `target`.
    @discardableResult
    public func addSymlink(path: String, target: String) throws -> Item {
        try add(.symlink(target: Array(target.utf8)), atPath: path)
    }

    /// Replaces a file's contents, as another client's upload would: a new content version.
    @discardableResult
    public func setContents(path: String, _ contents: [UInt8]) throws -> Item {
        try withTree { tree throws(ProviderError) in try tree.setContents(tree.resolve(path), to: contents) }
    }

    /// Changes metadata only (the fields set in `fields`, taken from `template`): a new metadata
    /// version with the content version unchanged.
    @discardableResult
    public func setMetadata(path: String, fields: ItemFields, from template: Item) throws -> Item {
        try withTree { tree throws(ProviderError) in
            try tree.setMetadata(tree.resolve(path), fields: fields, from: template)
        }
    }

    /// Renames and/or moves an item to a new path whose parent exists; the identifier stays.
    @discardableResult
    public func move(path: String, to newPath: String) throws -> Item {
        try withTree { tree throws(ProviderError) in
            var components = RemoteTree.components(of: newPath)
            guard let name = components.popLast() else { throw .cannotSynchronize(reason: "no target name") }
            let parent = try tree.resolve(components.map(\.description).joined(separator: "/"))
            return try tree.move(tree.resolve(path), to: parent, name: name)
        }
    }

    /// Deletes an item and everything under it.
    public func remove(path: String) throws {
        try withTree { tree throws(ProviderError) in try tree.remove(tree.resolve(path), recursive: true) }
    }

    /// The item at a path now, or nil.
    public func item(atPath path: String) -> Item? {
        tree.withLock { tree in (try? tree.resolve(path)).flatMap { tree.nodes[$0]?.item } }
    }

    /// A file's bytes now (what an upload left there), or nil when there is no such file.
    public func contents(of identifier: ItemIdentifier) -> [UInt8]? {
        tree.withLock { tree in tree.nodes[identifier].flatMap { $0.item.kind == .file ? $0.contents : nil } }
    }

    /// Drops all but the newest `keep` changes from the log: older anchors get `syncAnchorExpired`.
    public func trimChangeLog(keepingLast keep: Int = 0) { tree.withLock { $0.trimChanges(keepingLast: keep) } }

    /// Makes every page handed out so far answer `pageExpired`.
    public func expirePages() { tree.withLock { $0.expirePages() } }

    // MARK: FileProvider

    public func item(for identifier: ItemIdentifier) async throws -> Item {
        recorder.record(RecordedCall(operation: .item, identifier: identifier))
        return try withTree { tree throws(ProviderError) in try tree.node(identifier).item }
    }

    public func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator {
        recorder.record(RecordedCall(operation: .enumerator, identifier: container))
        if container == .trashContainer { throw ProviderError.featureUnsupported }
        if container != .workingSet { _ = try withTree { tree throws(ProviderError) in try tree.directory(container) } }
        return InMemoryEnumerator(provider: self, container: container)
    }

    public func invalidate() async {
        recorder.record(RecordedCall(operation: .invalidate, identifier: nil))
    }

    // MARK: Internals shared with the enumerator and the fetch and write halves

    /// Runs `body` on the remote's state under its lock; `body` must not suspend.
    func withTree<T: Sendable>(_ body: (inout RemoteTree) throws(ProviderError) -> T) throws(ProviderError) -> T {
        try tree.withLock { (tree: inout RemoteTree) throws(ProviderError) -> T in try body(&tree) }
    }

    /// The number of items a page holds for a suggestion, honouring `configuration.pageSize`.
    func pageSize(suggested: Int) -> Int {
        let suggested = max(1, suggested)
        guard let fixed = configuration.pageSize else { return suggested }
        return min(max(1, fixed), suggested * 100)
    }

    static func insert(_ entry: Entry, named name: Filename, in parent: ItemIdentifier, into tree: inout RemoteTree)
        throws(ProviderError) -> Item
    {
        switch entry {
        case .file(let contents): try tree.insert(name: name, parent: parent, kind: .file, contents: contents)
        case .directory: try tree.insert(name: name, parent: parent, kind: .directory)
        case .symlink(let target): try tree.insert(name: name, parent: parent, kind: .symlink, symlinkTarget: target)
        }
    }

    private func add(_ entry: Entry, atPath path: String) throws -> Item {
        try withTree { tree throws(ProviderError) in
            var components = RemoteTree.components(of: path)
            guard let name = components.popLast() else { throw .cannotSynchronize(reason: "empty path") }
            var parent = ItemIdentifier.rootContainer
            for component in components {
                if let existing = try tree.directory(parent).children[component] {
                    parent = existing
                } else {
                    parent = try tree.insert(name: component, parent: parent, kind: .directory).identifier
                }
            }
            return try Self.insert(entry, named: name, in: parent, into: &tree)
        }
    }
}
