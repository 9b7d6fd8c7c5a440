import FileProviderKit
import Foundation

/// The state of `InMemoryProvider`'s pretend remote: a tree of items, their contents, and a log of
/// changes for the working set. A plain value so the provider can keep it under one lock and every
/// mutation, remote-side or through the write half, goes through the same rules.
struct RemoteTree {
    /// One item with what the remote stores besides its metadata.
    struct Node {
        var item: Item
        var contents: [UInt8] = []
        var children: [Filename: ItemIdentifier] = [:]
    }

    /// One entry of the change log: an item that was created or updated, or one that was deleted.
    enum Change {
        case updated(ItemIdentifier)
        case deleted(ItemIdentifier)
    }

    private(set) var nodes: [ItemIdentifier: Node]
    /// Changes in order; the first has sequence number `trimmedThrough + 1`.
    private(set) var changes: [Change] = []
    /// The sequence number of the newest change; an anchor names the sequence it has seen.
    private(set) var sequence: UInt64 = 0
    /// Changes up to here were dropped from the log: older anchors have expired.
    private(set) var trimmedThrough: UInt64 = 0
    /// Bumped to expire every page handed out so far.
    private(set) var pageGeneration: UInt32 = 0
    /// Keep at most this many changes; older anchors expire as the log is trimmed (nil: keep all).
    var changeLogLimit: Int? {
        didSet { if let changeLogLimit { trimChanges(keepingLast: changeLogLimit) } }
    }
    /// Tells this remote's pages and anchors from those of another instance.
    let epoch = UInt64.random(in: 1...UInt64.max)
    private var nextIdentifier = 1
    private var nextVersion = 1

    init() {
        let root = Item(
            identifier: .rootContainer, parentIdentifier: .rootContainer, filename: "root", kind: .directory,
            creationDate: Timestamp.now, contentModificationDate: Timestamp.now, capabilities: Self.capabilities,
            version: ItemVersion(content: "c0", metadata: "m0"))
        nodes = [.rootContainer: Node(item: root)]
    }

    /// Everything but trashing, which this remote does not have.
    static let capabilities = ItemCapabilities.all.subtracting(.trashing)

    // MARK: Reading

    func node(_ identifier: ItemIdentifier) throws(ProviderError) -> Node {
        guard let node = nodes[identifier] else { throw .noSuchItem(identifier) }
        return node
    }

    func directory(_ identifier: ItemIdentifier) throws(ProviderError) -> Node {
        let node = try node(identifier)
        guard node.item.kind == .directory else {
            throw .cannotSynchronize(reason: "\(identifier) is not a directory")
        }
        return node
    }

    /// The item at a slash-separated path from the root ("" is the root).
    func resolve(_ path: String) throws(ProviderError) -> ItemIdentifier {
        var current = ItemIdentifier.rootContainer
        for name in Self.components(of: path) {
            guard let child = try directory(current).children[name] else { throw .noSuchItem(nil) }
            current = child
        }
        return current
    }

    /// Splits a path into names, ignoring empty components so "/a//b/" is "a/b".
    static func components(of path: String) -> [Filename] {
        path.split(separator: "/", omittingEmptySubsequences: true).map { Filename(String($0)) }
    }

    // MARK: Changing

    /// Adds an item under `parent`; the name must be valid and free.
    mutating func insert(
        name: Filename, parent: ItemIdentifier, kind: ItemKind, contents: [UInt8] = [],
        symlinkTarget: [UInt8]? = nil, template: Item? = nil, fields: ItemFields = []
    ) throws(ProviderError) -> Item {
        try validate(name)
        let parentNode = try directory(parent)
        if let existing = parentNode.children[name] { throw .filenameCollision(existing: existing) }
        let identifier = ItemIdentifier("mem-\(nextIdentifier)")
        nextIdentifier += 1
        let now = Timestamp.now
        var item = Item(
            identifier: identifier, parentIdentifier: parent, filename: name, kind: kind,
            size: UInt64(kind == .symlink ? symlinkTarget?.count ?? 0 : contents.count), creationDate: now,
            contentModificationDate: now, capabilities: Self.capabilities,
            version: ItemVersion(content: "c\(nextVersion)", metadata: "m\(nextVersion)"),
            symlinkTarget: kind == .symlink ? symlinkTarget ?? [] : nil)
        nextVersion += 1
        if let template { Self.copy(fields, from: template, to: &item) }
        nodes[identifier] = Node(item: item, contents: kind == .file ? contents : [])
        nodes[parent]?.children[name] = identifier
        log(.updated(identifier))
        return item
    }

    /// Replaces a file's bytes: a new content version (and metadata version, as size and date move).
    mutating func setContents(_ identifier: ItemIdentifier, to contents: [UInt8]) throws(ProviderError) -> Item {
        guard try node(identifier).item.kind == .file else {
            throw .cannotSynchronize(reason: "\(identifier) is not a file")
        }
        nodes[identifier]?.contents = contents
        return update(identifier, contentChanged: true) {
            $0.size = UInt64(contents.count)
            $0.contentModificationDate = Timestamp.now
        }
    }

    /// Changes a symlink's target, which is its content.
    mutating func setSymlinkTarget(_ identifier: ItemIdentifier, to target: [UInt8]) throws(ProviderError) -> Item {
        guard try node(identifier).item.kind == .symlink else {
            throw .cannotSynchronize(reason: "\(identifier) is not a symlink")
        }
        return update(identifier, contentChanged: true) {
            $0.symlinkTarget = target
            $0.size = UInt64(target.count)
        }
    }

    /// Copies `fields` of `template` onto the item: a metadata-only change.
    mutating func setMetadata(_ identifier: ItemIdentifier, fields: ItemFields, from template: Item)
        throws(ProviderError) -> Item
    {
        _ = try node(identifier)
        return update(identifier, contentChanged: false) { Self.copy(fields, from: template, to: &$0) }
    }

    /// Renames and/or moves an item; refuses a taken name and a directory moved into itself.
    mutating func move(_ identifier: ItemIdentifier, to parent: ItemIdentifier, name: Filename)
        throws(ProviderError) -> Item
    {
        guard identifier != .rootContainer else { throw .cannotSynchronize(reason: "the root cannot move") }
        if parent == .trashContainer { throw .featureUnsupported }
        try validate(name)
        let old = try node(identifier).item
        let target = try directory(parent)
        if let existing = target.children[name], existing != identifier { throw .filenameCollision(existing: existing) }
        var ancestor = parent
        while ancestor != .rootContainer {
            if ancestor == identifier { throw .cannotSynchronize(reason: "cannot move a directory into itself") }
            ancestor = try node(ancestor).item.parentIdentifier
        }
        nodes[old.parentIdentifier]?.children[old.filename] = nil
        nodes[parent]?.children[name] = identifier
        return update(identifier, contentChanged: false) {
            $0.parentIdentifier = parent
            $0.filename = name
        }
    }

    /// Deletes an item, and with `recursive` everything under it.
    mutating func remove(_ identifier: ItemIdentifier, recursive: Bool) throws(ProviderError) {
        guard identifier != .rootContainer else { throw .deletionRejected }
        let node = try node(identifier)
        if !node.children.isEmpty && !recursive { throw .directoryNotEmpty }
        nodes[node.item.parentIdentifier]?.children[node.item.filename] = nil
        var pending = [identifier]
        while let next = pending.popLast() {
            guard let removed = nodes.removeValue(forKey: next) else { continue }
            pending.append(contentsOf: removed.children.values)
            log(.deleted(next))
        }
    }

    /// Drops all but the newest `keep` changes; anchors from before them expire.
    mutating func trimChanges(keepingLast keep: Int) {
        let drop = max(0, changes.count - max(0, keep))
        changes.removeFirst(drop)
        trimmedThrough += UInt64(drop)
    }

    mutating func expirePages() { pageGeneration &+= 1 }

    // MARK: Helpers

    private func validate(_ name: Filename) throws(ProviderError) {
        do { try name.validate() } catch { throw error as? ProviderError ?? .cannotSynchronize(reason: "\(error)") }
    }

    private mutating func update(_ identifier: ItemIdentifier, contentChanged: Bool, _ change: (inout Item) -> Void)
        -> Item
    {
        var item = nodes[identifier]!.item
        change(&item)
        let content = contentChanged ? Array("c\(nextVersion)".utf8) : item.version.content
        item.version = ItemVersion(content: content, metadata: Array("m\(nextVersion)".utf8))
        nextVersion += 1
        nodes[identifier]?.item = item
        log(.updated(identifier))
        return item
    }

    private mutating func log(_ change: Change) {
        changes.append(change)
        sequence += 1
        if let changeLogLimit, changes.count > changeLogLimit { trimChanges(keepingLast: changeLogLimit) }
    }

    private static func copy(_ fields: ItemFields, from template: Item, to item: inout Item) {
        if fields.contains(.contentModificationDate) { item.contentModificationDate = template.contentModificationDate }
        if fields.contains(.creationDate) { item.creationDate = template.creationDate }
        if fields.contains(.permissions) { item.permissions = template.permissions & 0o7777 }
        if fields.contains(.userInfo) { item.userInfo = template.userInfo }
    }
}
