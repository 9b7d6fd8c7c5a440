#if canImport(Glibc)
    import Glibc
#endif

/// The reference model of the operation checker (DECISIONS 210–212): what POSIX says the mount
/// shows after each operation, and what the remote must hold once `fpfs sync` drained.
///
/// Every item is a node; a path names at most one node. A node is *contested* once a change on
/// the remote raced it (or an operation tied it to one that was): then the documented conflict
/// rules allow more than one outcome, so the node is held to "nothing invented" (what shows under
/// any name it had, or a conflict copy of one, is a version someone made) and "nothing lost" (a
/// local version the remote had not seen yet is found under one of those names) instead of to
/// one exact path. Uncontested nodes must be exactly where and what the model says.
struct CheckerModel: Sendable {
    enum Kind: Sendable { case file, directory }

    struct Node: Sendable {
        var kind: Kind
        var content: [UInt8] = []
        /// Every path the node has had: the names its versions may show under.
        var names: Set<String> = []
        /// Every content it has had, after any operation (a kill -9 may show any of them).
        var versions: Set<[UInt8]> = []
        var contested = false
        /// A version that must still be found on the remote: the local content a racing remote
        /// change met before the remote had it.
        var obligation: [UInt8]?
        var xattrs: [String: String] = [:]
    }

    /// What a path shows in a tree read from disk.
    enum Entry: Equatable, Sendable {
        case directory
        case file([UInt8])
    }

    private(set) var nodes: [Int: Node] = [:]
    /// Path → node, for everything linked.
    private(set) var tree: [String: Int] = [:]
    /// Open handle → node.
    private(set) var handles: [Int: Int] = [:]
    private var nextNode = 0

    // MARK: Questions

    func node(at path: String) -> Node? { tree[path].flatMap { nodes[$0] } }

    func isDirectory(_ path: String) -> Bool { path.isEmpty || node(at: path)?.kind == .directory }

    func content(ofHandle handle: Int) -> [UInt8]? { handles[handle].flatMap { nodes[$0]?.content } }

    var openHandles: [Int] { handles.keys.sorted() }

    /// Where the file of an open handle is linked now, with its content; nil once unlinked.
    func file(ofHandle handle: Int) -> (path: String, content: [UInt8])? {
        guard let id = handles[handle], let node = nodes[id], let path = tree.first(where: { $0.value == id })?.key
        else { return nil }
        return (path, node.content)
    }

    /// Linked paths, sorted.
    var paths: [String] { tree.keys.sorted() }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    static func join(_ parent: String, _ name: String) -> String { parent.isEmpty ? name : parent + "/" + name }

    /// `NAME (conflict YYYY-MM-DD HHMMSS).EXT` → `NAME.EXT`, also for a conflict copy of a
    /// conflict copy; any other path as it is.
    static func baseName(of path: String) -> String {
        let marker = " (conflict "
        let stampLength = marker.count + "YYYY-MM-DD HHMMSS)".count
        guard let range = path.range(of: marker, options: .backwards),
            !path[range.lowerBound...].contains("/"),
            path.distance(from: range.lowerBound, to: path.endIndex) >= stampLength
        else { return path }
        let end = path.index(range.lowerBound, offsetBy: stampLength)
        guard path[path.index(before: end)] == ")" else { return path }
        return baseName(of: String(path[..<range.lowerBound]) + String(path[end...]))
    }

    private func hasChildren(_ path: String) -> Bool { tree.keys.contains { $0.hasPrefix(path + "/") } }

    /// The errno the parent of `path` gives a lookup, or 0.
    private func parentError(_ path: String) -> Int32 {
        let parent = Self.parent(of: path)
        if parent.isEmpty { return 0 }
        guard let node = node(at: parent) else { return ENOENT }
        return node.kind == .directory ? 0 : ENOTDIR
    }

    /// What POSIX says `operation` returns: 0 or an errno. Only for operations on the mount.
    func outcome(of operation: CheckerOperation) -> Int32 {
        switch operation {
        case .create(let path, _):
            let parent = parentError(path)
            if parent != 0 { return parent }
            return tree[path] == nil ? 0 : EEXIST
        case .open(let path, _, _), .truncate(let path, _):
            let parent = parentError(path)
            if parent != 0 { return parent }
            guard let node = node(at: path) else { return ENOENT }
            return node.kind == .directory ? EISDIR : 0
        case .write(let handle, _, _), .fsync(let handle), .close(let handle):
            return handles[handle] == nil ? EBADF : 0
        case .rename(let from, let to):
            return renameOutcome(from, to)
        case .unlink(let path):
            let parent = parentError(path)
            if parent != 0 { return parent }
            guard let node = node(at: path) else { return ENOENT }
            return node.kind == .directory ? EISDIR : 0
        case .mkdir(let path):
            let parent = parentError(path)
            if parent != 0 { return parent }
            return tree[path] == nil ? 0 : EEXIST
        case .rmdir(let path):
            let parent = parentError(path)
            if parent != 0 { return parent }
            guard let node = node(at: path) else { return ENOENT }
            if node.kind != .directory { return ENOTDIR }
            return hasChildren(path) ? ENOTEMPTY : 0
        case .setxattr(let path, _, _):
            let parent = parentError(path)
            if parent != 0 { return parent }
            return tree[path] == nil ? ENOENT : 0
        case .sync, .remoteWrite, .remoteDelete, .remoteRename, .kill, .outage, .recover:
            return 0
        }
    }

    private func renameOutcome(_ from: String, _ to: String) -> Int32 {
        for path in [from, to] {
            let parent = parentError(path)
            if parent != 0 { return parent }
        }
        guard let source = node(at: from) else { return ENOENT }
        if from == to { return 0 }
        if source.kind == .directory, to.hasPrefix(from + "/") { return EINVAL }
        guard let target = node(at: to) else { return 0 }
        switch (source.kind, target.kind) {
        case (.file, .directory): return EISDIR
        case (.directory, .file): return ENOTDIR
        case (.directory, .directory): return hasChildren(to) ? ENOTEMPTY : 0
        case (.file, .file): return 0
        }
    }

    // MARK: Changes

    /// Applies an operation on the mount that succeeded, as POSIX says.
    mutating func apply(_ operation: CheckerOperation) {
        switch operation {
        case .create(let path, let handle):
            let id = link(Node(kind: .file, versions: [[]]), at: path)
            handles[handle] = id
        case .open(let path, let truncate, let handle):
            guard let id = tree[path] else { return }
            handles[handle] = id
            if truncate { change(id) { $0.removeAll() } }
        case .write(let handle, let offset, let bytes):
            guard let id = handles[handle] else { return }
            change(id) { content in
                if content.count < offset + bytes.count {
                    content += [UInt8](repeating: 0, count: offset + bytes.count - content.count)
                }
                content.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
            }
        case .fsync: break
        case .close(let handle): handles[handle] = nil
        case .truncate(let path, let size):
            guard let id = tree[path] else { return }
            change(id) { content in
                if content.count > size {
                    content.removeLast(content.count - size)
                } else {
                    content += [UInt8](repeating: 0, count: size - content.count)
                }
            }
        case .rename(let from, let to):
            move(from, to)
        case .unlink(let path), .rmdir(let path):
            unlink(path, keepingObligations: false)
        case .mkdir(let path):
            link(Node(kind: .directory), at: path)
        case .setxattr(let path, let name, let value):
            guard let id = tree[path] else { return }
            nodes[id]?.xattrs[name] = value
        case .sync, .remoteWrite, .remoteDelete, .remoteRename, .kill, .outage, .recover:
            break
        }
        spreadContest()
    }

    /// An item the remote holds before the first mount.
    mutating func addInitial(_ path: String, _ entry: Entry) {
        switch entry {
        case .directory: link(Node(kind: .directory), at: path)
        case .file(let bytes): link(Node(kind: .file, content: bytes, versions: [bytes]), at: path)
        }
    }

    /// The handles a kill -9 or a checkpoint closed.
    mutating func closeAllHandles() { handles.removeAll() }

    /// A calm change on the remote, after `fpfs sync` drained and followed by `fpfs signal`:
    /// the mount shows exactly the remote's new state.
    mutating func applyCalmRemote(_ operation: CheckerOperation) {
        switch operation {
        case .remoteWrite(let path, let bytes, _):
            if let id = tree[path] {
                nodes[id]?.content = bytes
                nodes[id]?.versions.insert(bytes)
                nodes[id]?.xattrs = [:]
            } else {
                var node = Node(kind: .file, content: bytes)
                node.versions.insert(bytes)
                link(node, at: path)
            }
        case .remoteDelete(let path, _):
            unlink(path, keepingObligations: false)
        case .remoteRename(let from, let to, _):
            move(from, to)
            // A remote that names items by path sees a new item, without this mount's attributes.
            if let id = tree[to] { nodes[id]?.xattrs = [:] }
        default:
            break
        }
        spreadContest()
    }

    /// A racing change on the remote: the nodes at its paths become contested; what the remote
    /// writes becomes a version those paths may show; a local content the remote did not have
    /// (`remoteContents`: what the remote had at each path just before) must not be lost.
    mutating func contest(_ operation: CheckerOperation, remoteContents: [String: [UInt8]]) {
        var paths: [String] = []
        var written: [UInt8]?
        switch operation {
        case .remoteWrite(let path, let bytes, _):
            paths = [path]
            written = bytes
        case .remoteDelete(let path, _):
            paths = [path]
        case .remoteRename(let from, let to, _):
            paths = [from, to]
            written = remoteContents[from]
        default:
            return
        }
        for path in paths {
            guard let id = tree[path], var node = nodes[id], node.kind == .file else { continue }
            node.contested = true
            node.names.formUnion(paths)
            // What the remote holds under any name of the node (a rename here not sent yet) is
            // there, and the remote's to overwrite; only a version it has nowhere is owed.
            if !node.names.contains(where: { remoteContents[$0] == node.content }) { node.obligation = node.content }
            nodes[id] = node
        }
        // Likewise a remote rename onto, or a deletion of, the old name of a file renamed here
        // may take that file with it (the remote's to do), or find nothing there.
        let target: String? =
            switch operation {
            case .remoteRename(_, let to, _): to
            case .remoteDelete(let path, _): path
            default: nil
            }
        if let target {
            for (id, node) in nodes where node.kind == .file && node.names.contains(target) && tree[target] != id {
                nodes[id]?.contested = true
            }
        }
        // And a remote rename of the old name of a file renamed here moves that file there (on a
        // remote whose identifiers are paths, the rename here then finds nothing to move).
        if case .remoteRename(let from, let to, _) = operation {
            for (id, node) in nodes where node.kind == .file && node.names.contains(from) && tree[from] != id {
                nodes[id]?.contested = true
                nodes[id]?.names.insert(to)
            }
        }
        guard let written else { return }
        var remote = Node(kind: .file, content: written, names: [paths.last!], contested: true)
        remote.versions.insert(written)
        // A file renamed here may still have its old name on the remote (the rename not sent
        // yet): a remote write there, or a remote rename onto it, goes into it, and its bytes
        // follow it to its new name. The model cannot tell whether the rename went first, so
        // either outcome holds; what the renamed file held is then not checked as an obligation
        // (a remote overwrite is the remote's to make, and a local version not yet sent meets a
        // conflict, tested elsewhere).
        if let path = paths.last {
            for (id, var node) in nodes where node.kind == .file && node.names.contains(path) && tree[path] != id {
                node.contested = true
                node.versions.insert(written)
                nodes[id] = node
                remote.names.formUnion(tree.filter { $0.value == id }.map(\.key))
            }
            // So does a folder renamed here: what the remote writes into it under its old name
            // lands in it, and follows it to its place here once its move is sent.
            for (id, node) in nodes where node.kind == .directory {
                for old in node.names where path.hasPrefix(old + "/") && tree[old] != id {
                    for (current, held) in tree where held == id {
                        remote.names.insert(current + String(path.dropFirst(old.count)))
                    }
                }
            }
        }
        add(remote)
    }

    /// Marks the nodes an operation in a race window touched (its paths) as contested.
    mutating func contest(pathsOf operation: CheckerOperation) {
        for path in Self.paths(of: operation) {
            guard let id = tree[path] else { continue }
            nodes[id]?.contested = true
        }
        // A rename here carries the item with it, and so what the remote wrote into it meanwhile
        // (metadata is last writer wins, contents merge: the remote's bytes under the new name).
        if case .rename(let from, let to) = operation {
            for (id, var node) in nodes where node.contested {
                for name in node.names where name == from || name.hasPrefix(from + "/") {
                    node.names.insert(to + name.dropFirst(from.count))
                }
                nodes[id] = node
            }
        }
        if case .write(let handle, _, _) = operation, let id = handles[handle] { nodes[id]?.contested = true }
    }

    static func paths(of operation: CheckerOperation) -> [String] {
        switch operation {
        case .create(let path, _), .open(let path, _, _), .truncate(let path, _), .unlink(let path),
            .mkdir(let path), .rmdir(let path), .setxattr(let path, _, _):
            [path]
        case .rename(let from, let to): [from, to]
        case .remoteWrite(let path, _, _), .remoteDelete(let path, _): [path]
        case .remoteRename(let from, let to, _): [from, to]
        case .write, .fsync, .close, .sync, .kill, .outage, .recover: []
        }
    }

    // MARK: Checkpoints

    /// Compares the mount, read after `fpfs sync` drained, with the model, and takes what it
    /// shows of contested nodes as their state from now on. Returns what does not hold.
    mutating func reconcile(with mount: [String: Entry]) -> [String] {
        var problems: [String] = []
        // A folder made here at a name the remote took meanwhile takes a conflict name, with what
        // it holds (SEMANTICS, conflicts): the model's folder follows it there.
        for path in paths {
            guard let node = node(at: path), node.kind == .directory, node.contested, mount[path] != .directory,
                let aside = mount.keys.sorted().first(where: {
                    mount[$0] == .directory && tree[$0] == nil && $0 != path && Self.baseName(of: $0) == path
                })
            else { continue }
            move(path, aside)
        }
        for path in paths {
            guard let id = tree[path], let node = nodes[id] else { continue }
            let shown = mount[path]
            if !node.contested {
                switch (node.kind, shown) {
                case (.directory, .directory?): continue
                case (.file, .file(let bytes)?) where bytes == node.content: continue
                case (_, nil): problems.append("lost: \(path) (\(describe(node))) is not in the mount")
                case (_, let other?):
                    problems.append(
                        "\(path) should be \(describe(node)), the mount has \(TreeSnapshot.describe(other))")
                }
                continue
            }
            switch (node.kind, shown) {
            case (_, nil): unlink(path, keepingObligations: true)
            case (.file, .file(let bytes)?):
                if bytes != node.content, !explains(path, bytes) {
                    problems.append(
                        "\(path) holds \(CheckerOperation.summary(bytes)), which nobody wrote under that name")
                }
                nodes[id]?.content = bytes
                nodes[id]?.versions.insert(bytes)
            case (.directory, .directory?): continue
            case (_, let other?):
                problems.append("\(path) should be \(describe(node)), the mount has \(TreeSnapshot.describe(other))")
            }
        }
        for (path, entry) in mount.sorted(by: { $0.key < $1.key }) where tree[path] == nil {
            switch entry {
            case .file(let bytes):
                if !explains(path, bytes) {
                    let what = Self.baseName(of: path) == path ? "a file" : "a conflict copy"
                    problems.append("\(path) is \(what) nobody made (\(CheckerOperation.summary(bytes)))")
                }
                var node = Node(kind: .file, content: bytes, contested: true)
                node.versions.insert(bytes)
                link(node, at: path)
            case .directory:
                if !mount.keys.contains(where: { $0.hasPrefix(path + "/") }) {
                    problems.append("\(path) is an empty folder nobody made (or one deleted here, back again)")
                }
                link(Node(kind: .directory, contested: true), at: path)
            }
        }
        for id in nodes.keys.sorted() {
            guard let obligation = nodes[id]?.obligation, let names = nodes[id]?.names else { continue }
            let found = mount.contains { path, entry in
                entry == .file(obligation) && (names.contains(path) || names.contains(Self.baseName(of: path)))
            }
            if found {
                nodes[id]?.obligation = nil
            } else {
                problems.append(
                    "lost: the local version \(CheckerOperation.summary(obligation)) of \(names.sorted()) is nowhere")
            }
        }
        spreadContest()
        return problems
    }

    /// Extended attributes the mount must show: those set on uncontested files.
    var expectedAttributes: [(path: String, name: String, value: String)] {
        paths.flatMap { path -> [(path: String, name: String, value: String)] in
            guard let node = node(at: path), !node.contested else { return [] }
            return node.xattrs.sorted { $0.key < $1.key }.map { (path, $0.key, $0.value) }
        }
    }

    /// True when a contested node that had the name (or the conflict copy's original name) had
    /// this content.
    private func explains(_ path: String, _ bytes: [UInt8]) -> Bool {
        let base = Self.baseName(of: path)
        return nodes.values.contains { node in
            node.contested && (node.names.contains(path) || node.names.contains(base)) && node.versions.contains(bytes)
        }
    }

    private func describe(_ node: Node) -> String {
        TreeSnapshot.describe(node.kind == .directory ? .directory : .file(node.content))
    }

    // MARK: Tree bookkeeping

    @discardableResult
    private mutating func add(_ node: Node) -> Int {
        nextNode += 1
        nodes[nextNode] = node
        return nextNode
    }

    @discardableResult
    private mutating func link(_ node: Node, at path: String) -> Int {
        let id = add(node)
        tree[path] = id
        nodes[id]?.names.insert(path)
        return id
    }

    private mutating func change(_ id: Int, _ body: (inout [UInt8]) -> Void) {
        guard var node = nodes[id] else { return }
        body(&node.content)
        node.versions.insert(node.content)
        node.obligation = nil
        nodes[id] = node
    }

    /// Removes `path` and what is beneath it; the nodes stay known (open handles, contests). A
    /// deletion made here ends what the nodes owed; one the mount shows after a race does not.
    private mutating func unlink(_ path: String, keepingObligations: Bool) {
        for key in tree.keys where key == path || key.hasPrefix(path + "/") {
            if let id = tree[key], !keepingObligations { nodes[id]?.obligation = nil }
            tree[key] = nil
        }
    }

    private mutating func move(_ from: String, _ to: String) {
        guard from != to, let source = tree[from] else { return }
        let sourceContested = nodes[source]?.contested ?? false
        if let target = tree[to] {
            if sourceContested || nodes[target]?.contested == true { nodes[source]?.contested = true }
            nodes[target]?.obligation = nil
            tree[to] = nil
        }
        let moved = tree.filter { $0.key == from || $0.key.hasPrefix(from + "/") }
        for key in moved.keys { tree[key] = nil }
        for (key, id) in moved {
            let path = to + String(key.dropFirst(from.count))
            tree[path] = id
            nodes[id]?.names.insert(path)
        }
        // Names of unlinked contested nodes beneath the folder move with it on the remote too.
        for id in nodes.keys where nodes[id]?.contested == true {
            let renamed = nodes[id]!.names.filter { $0.hasPrefix(from + "/") }.map {
                to + String($0.dropFirst(from.count))
            }
            nodes[id]?.names.formUnion(renamed)
        }
    }

    /// A node linked at a name a contested node had is tied to that contest; a folder too, which
    /// may then take a conflict name (`reconcile`).
    private mutating func spreadContest() {
        let contestedNames = Set(nodes.values.filter(\.contested).flatMap(\.names))
        for (path, id) in tree where contestedNames.contains(path) {
            nodes[id]?.contested = true
        }
    }
}
