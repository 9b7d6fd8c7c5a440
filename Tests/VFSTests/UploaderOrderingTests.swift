import FileProviderKit
import Foundation
import FuseKit
import MetadataStore
import ProviderTesting
import Testing
import VFS

/// The uploader's ordering as a property (issue 51, item 8): every journal that operations over a
/// tree can produce — creations, folders, moves into new folders and over names, swaps through a
/// temporary name, metadata changes, deletions, in any order and coalesced — drains, and leaves
/// the remote equal to the mount, with no conflict copy (nothing changed on the remote).
///
/// Seeded: a failure prints its seed, and `FPFS_ORDERING_SEED=N` replays it (with
/// `FPFS_ORDERING_ROUNDS=1`). `FPFS_ORDERING_ROUNDS` runs more sequences than the suite's.
@Suite("Uploader ordering: every journal drains")
struct UploaderOrderingTests {
    @Test func randomOperationSequencesDrainAndLeaveTheRemoteEqualToTheMount() async throws {
        let environment = ProcessInfo.processInfo.environment
        let rounds = environment["FPFS_ORDERING_ROUNDS"].flatMap(Int.init) ?? 12
        let first = environment["FPFS_ORDERING_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...1_000_000)
        for round in 0..<UInt64(rounds) {
            try await run(seed: first + round)
        }
    }

    /// One sequence of `seed`: operations over a remote tree, the uploader held back while they
    /// run (they reach it coalesced, the hostile case) in half of the seeds, sending as they go in
    /// the other half; then the journal must drain and the trees must match.
    private func run(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let remote = InMemoryProvider()
        for folder in ["a", "a/b", "c"] { _ = try remote.addDirectory(path: folder) }
        for file in ["a/one", "a/b/two", "c/three", "four"] { _ = try remote.addFile(path: file, text: file) }
        let heldBack = random.next() % 2 == 0
        let vfs = try await VFSHarness.make(
            provider: remote, uploadSettle: heldBack ? .seconds(600) : .milliseconds(5),
            uploadBurstLag: heldBack ? .seconds(600) : .milliseconds(20))
        var operations = TreeOperations(vfs: vfs)
        try await operations.learn(["a", "a/b", "c"], files: ["a/one", "a/b/two", "c/three", "four"])
        var done: [String] = []
        for _ in 0..<(30 + Int(random.next() % 30)) {
            if let done1 = try await operations.randomStep(&random) { done.append(done1) }
            if random.next() % 10 == 0 {
                // `fpfs sync` in the middle: part of the journal goes, the rest keeps coming.
                vfs.fileSystem.retryUploadsNow()
                try await Task.sleep(for: .milliseconds(Int(random.next() % 20)))
            }
        }
        let label = "seed \(seed) (FPFS_ORDERING_SEED=\(seed) FPFS_ORDERING_ROUNDS=1), operations: \(done)"
        try await vfs.waitForUploads(limit: .seconds(20))
        let pending = try await vfs.fileSystem.uploadQueue()
        #expect(pending.pending == 0, "the journal did not drain: \(pending.first), \(label)")
        let local = try await operations.localTree()
        let uploaded = try await Self.remoteTree(remote)
        #expect(local == uploaded, "the remote differs from the mount, \(label)")
        #expect(!uploaded.keys.contains { $0.contains("(conflict") || $0.contains(".fpfs-moving") }, "\(label)")
    }

    /// A change that cannot go while the remote answers — its folder's creation was refused — is
    /// shown as stuck, with what it waits for; one behind a rename that merely waits its turn is
    /// not stuck.
    @Test func aChangeBehindARefusedOneIsShownStuckWithWhatItWaitsFor() async throws {
        let inner = try InMemoryProvider.docs()
        let injector = FaultInjector()
        _ = injector.add(FaultRule(.error(.featureUnsupported), on: .create, for: .filename("refused")))
        let vfs = try await VFSHarness.make(provider: injector.wrap(inner), uploadSettle: .milliseconds(5))
        _ = try await vfs.fileSystem.mkdir(parent: .root, name: bytes("refused"), mode: 0o755, context: vfs.context)
        _ = try await vfs.writeFile("refused/inside.txt", bytes("waits\n"))
        vfs.fileSystem.retryUploadsNow()
        var inside: PendingSummary?
        try await VFSHarness.eventually("the change inside is shown stuck") {
            inside = try await vfs.fileSystem.uploadQueue().first.first { $0.name == "inside.txt" }
            return inside?.isStuck == true
        }
        #expect(inside?.waitsFor == "the creation of refused")
        #expect(try await vfs.fileSystem.uploadQueue().first.first { $0.name == "refused" }?.isStuck != true)
    }

    /// A folder moved into one that lies inside it on the remote goes after that one's move out,
    /// also when a later change moved the other's entry behind it (seed 826327: the move of `a`
    /// into `b` was refused as a move into itself at every attempt, and the queue stopped).
    @Test func aFolderMovedIntoOneInsideItWaitsForThatOnesMoveOut() async throws {
        let remote = InMemoryProvider()
        for folder in ["a", "a/b"] { _ = try remote.addDirectory(path: folder) }
        _ = try remote.addFile(path: "a/b/kept", text: "kept")
        let vfs = try await VFSHarness.make(
            provider: remote, uploadSettle: .seconds(600), uploadBurstLag: .seconds(600))
        var operations = TreeOperations(vfs: vfs)
        try await operations.learn(["a", "a/b"], files: ["a/b/kept"])
        try await operations.move("a/b", to: "b")
        try await operations.move("a", to: "b/a")
        _ = try await vfs.fileSystem.setattr(
            inode: try await vfs.resolve("b").inode, changes: AttributeChanges(permissions: 0o750), handle: nil,
            context: vfs.context)
        try await vfs.waitForUploads(limit: .seconds(20))
        let uploaded = try await Self.remoteTree(remote)
        #expect(
            uploaded == [
                "b": .folder(permissions: 0o750), "b/a": .folder(permissions: 0o755),
                "b/kept": .file(Array("kept".utf8), permissions: 0o644),
            ])
    }

    /// The remote's tree: each path with its kind and a file's bytes.
    static func remoteTree(_ remote: InMemoryProvider) async throws -> [String: TreeEntry] {
        var tree: [String: TreeEntry] = [:]
        var folders: [(ItemIdentifier, String)] = [(.rootContainer, "")]
        while let (folder, path) = folders.popLast() {
            let enumerator = try await remote.enumerator(for: folder)
            var page = EnumerationPage.initial
            while true {
                let result = try await enumerator.enumerateItems(startingAt: page, suggestedPageSize: 1000)
                for item in result.items {
                    let child = path.isEmpty ? item.filename.description : "\(path)/\(item.filename)"
                    switch item.kind {
                    case .directory:
                        tree[child] = .folder(permissions: item.permissions)
                        folders.append((item.identifier, child))
                    default:
                        tree[child] = .file(remote.contents(of: item.identifier) ?? [], permissions: item.permissions)
                    }
                }
                guard let next = result.nextPage else { break }
                page = next
            }
        }
        return tree
    }
}

/// An entry of a tree as the property compares it.
enum TreeEntry: Hashable, CustomStringConvertible {
    case folder(permissions: UInt16)
    case file([UInt8], permissions: UInt16)

    var description: String {
        switch self {
        case .folder(let permissions): "folder \(String(permissions, radix: 8))"
        case .file(let bytes, let permissions): "file \(String(permissions, radix: 8)) \(bytes.count) bytes"
        }
    }
}

/// Random operations through the file system's calls, over the paths it knows to exist.
struct TreeOperations {
    let vfs: VFSHarness
    private(set) var folders: [String] = [""]
    private(set) var files: [String] = []
    private var counter = 0

    init(vfs: VFSHarness) { self.vfs = vfs }

    mutating func learn(_ folders: [String], files: [String]) async throws {
        // Listed once, as a user's shell would before working in them.
        for folder in [""] + folders { _ = try await vfs.list(try await vfs.resolve(folder).inode) }
        self.folders += folders
        self.files += files
    }

    private mutating func freshName() -> String {
        counter += 1
        return "n\(counter)"
    }

    private static func split(_ path: String) -> (parent: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return ("", path) }
        return (String(path[..<slash]), String(path[path.index(after: slash)...]))
    }

    private static func join(_ parent: String, _ name: String) -> String {
        parent.isEmpty ? name : "\(parent)/\(name)"
    }

    /// One random operation; what it did, or nil when it found nothing to do it on.
    mutating func randomStep(_ random: inout SplitMix64) async throws -> String? {
        let context = vfs.context
        let fileSystem = vfs.fileSystem
        func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[Int(random.next() % UInt64(items.count))] }
        switch random.next() % 11 {
        case 0, 1:
            guard let parent = pick(folders) else { return nil }
            let path = Self.join(parent, freshName())
            _ = try await vfs.writeFile(path, Array("\(path) \(random.next())".utf8))
            files.append(path)
            return "create \(path)"
        case 2:
            guard let parent = pick(folders) else { return nil }
            let path = Self.join(parent, freshName())
            _ = try await fileSystem.mkdir(
                parent: try await vfs.resolve(parent).inode, name: Array(Self.split(path).name.utf8), mode: 0o755,
                context: context)
            folders.append(path)
            return "mkdir \(path)"
        case 3, 4:
            // A move of a file or folder to a new name, in a folder that may be new.
            let isFolder = random.next() % 3 == 0
            guard let source = pick(isFolder ? folders.filter { !$0.isEmpty } : files) else { return nil }
            let targets = folders.filter { !isFolder || ($0 != source && !$0.hasPrefix(source + "/")) }
            guard let parent = pick(targets) else { return nil }
            let target = Self.join(parent, freshName())
            try await move(source, to: target)
            return "mv \(source) \(target)"
        case 5:
            // A file over another's name.
            guard let source = pick(files), let target = pick(files.filter { $0 != source }) else { return nil }
            try await move(source, to: target)
            return "mv \(source) over \(target)"
        case 6:
            // A swap through a temporary name, as editors and build tools do.
            let isFolder = random.next() % 3 == 0
            let candidates = isFolder ? folders.filter { !$0.isEmpty } : files
            guard let first = pick(candidates),
                let second = pick(
                    candidates.filter {
                        $0 != first && !$0.hasPrefix(first + "/") && !first.hasPrefix($0 + "/")
                    })
            else { return nil }
            let temporary = Self.join(Self.split(first).parent, freshName())
            try await move(first, to: temporary)
            try await move(second, to: first)
            try await move(temporary, to: second)
            return "swap \(first) \(second)"
        case 7, 8:
            // Mode and times, as cp -a and tar -x set them on a folder after filling it.
            guard let path = pick(folders.filter { !$0.isEmpty } + files) else { return nil }
            let inode = try await vfs.resolve(path).inode
            let isFolder = folders.contains(path)
            _ = try await fileSystem.setattr(
                inode: inode,
                changes: AttributeChanges(
                    permissions: isFolder ? 0o750 : 0o600,
                    modificationTime: .time(FileTime(seconds: 1_600_000_000 + Int64(random.next() % 1000)))),
                handle: nil, context: context)
            return "chmod+touch \(path)"
        case 9:
            guard let path = pick(files) else { return nil }
            try await vfs.overwrite(try await vfs.resolve(path).inode, Array("edited \(random.next())".utf8))
            return "edit \(path)"
        default:
            // A file, or a folder emptied first (rm -r).
            if random.next() % 3 == 0, let folder = pick(folders.filter { !$0.isEmpty }) {
                try await removeTree(folder)
                return "rm -r \(folder)"
            }
            guard let path = pick(files) else { return nil }
            let (parent, name) = Self.split(path)
            try await fileSystem.unlink(
                parent: try await vfs.resolve(parent).inode, name: Array(name.utf8), context: context)
            files.removeAll { $0 == path }
            return "rm \(path)"
        }
    }

    /// rename(2) of `source` to `target`, replacing a file there; the known paths follow.
    mutating func move(_ source: String, to target: String) async throws {
        let (sourceParent, sourceName) = Self.split(source)
        let (targetParent, targetName) = Self.split(target)
        try await vfs.fileSystem.rename(
            parent: try await vfs.resolve(sourceParent).inode, name: Array(sourceName.utf8),
            newParent: try await vfs.resolve(targetParent).inode, newName: Array(targetName.utf8), flags: 0,
            context: vfs.context)
        func moved(_ path: String) -> String {
            if path == source { return target }
            if path.hasPrefix(source + "/") { return target + path.dropFirst(source.count) }
            return path
        }
        files.removeAll { $0 == target }
        files = files.map(moved)
        folders = folders.map(moved)
    }

    private mutating func removeTree(_ folder: String) async throws {
        for file in files where Self.split(file).parent == folder {
            try await vfs.fileSystem.unlink(
                parent: try await vfs.resolve(folder).inode, name: Array(Self.split(file).name.utf8),
                context: vfs.context)
            files.removeAll { $0 == file }
        }
        for child in folders where Self.split(child).parent == folder && child != folder {
            try await removeTree(child)
        }
        let (parent, name) = Self.split(folder)
        try await vfs.fileSystem.rmdir(
            parent: try await vfs.resolve(parent).inode, name: Array(name.utf8), context: vfs.context)
        folders.removeAll { $0 == folder }
    }

    /// The mount's tree, walked through readdir, lookup and read.
    func localTree() async throws -> [String: TreeEntry] {
        var tree: [String: TreeEntry] = [:]
        var pending = [""]
        while let folder = pending.popLast() {
            for name in try await vfs.list(try await vfs.resolve(folder).inode) where name != "." && name != ".." {
                let path = Self.join(folder, name)
                let entry = try await vfs.resolve(path)
                let attributes = try #require(entry.attributes)
                if attributes.type == .directory {
                    tree[path] = .folder(permissions: attributes.permissions)
                    pending.append(path)
                } else {
                    tree[path] = .file(try await vfs.readAll(entry.inode), permissions: attributes.permissions)
                }
            }
        }
        return tree
    }
}

/// A small seeded generator (SplitMix64), so that a seed replays the same sequence.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
