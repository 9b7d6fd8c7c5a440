import FileProviderKit
import Foundation
import Glibc
import Synchronization

/// The folder shown as a remote: where its items are, what they look like as `Item`s, and which
/// identifier names which path. All methods block; call them through `BlockingIO`.
///
/// Identifier scheme — chosen so identifiers survive renames and moves, as the contract asks:
/// - the root folder is `.rootContainer`;
/// - any other item is named by its inode: `i<inode>`, then `.<seconds>.<nanoseconds>` of its
///   birth time where the file system records one, then `@<device>` when it lives on another file
///   system than the root (something mounted below it). An inode stays with a file through renames,
///   moves and in-place writes; the birth time tells a reused inode number from its previous owner;
/// - a regular file with several hard links would give one identifier to several places, so it is
///   named by its path instead: `p<hex of the relative path>`. Such an identifier does not survive a
///   rename, the honest answer for a name that is only one of several.
///
/// An index maps identifiers to the paths where enumerations last saw them. Every use checks that
/// the path still holds that identifier; on a miss the whole tree is walked and the index rebuilt,
/// so an item renamed behind the provider's back is found again.
final class LocalTree: Sendable {
    /// The canonical absolute path of the root folder.
    let rootPath: [UInt8]
    private let rootDevice: UInt64
    private let rootInode: UInt64
    private let index = Mutex(Index())

    private struct Index {
        var paths: [ItemIdentifier: RelativePath] = [:]
        /// When the last walk started: a lookup that began before then and misses needs no new
        /// walk (one that began later might be looking for an item the walk could not see yet).
        var rebuilt: ContinuousClock.Instant?
    }

    /// A path below the root and what is there now.
    struct Located: Sendable {
        var path: RelativePath
        var status: FileStatus
    }

    /// Opens `root`, which must be an existing folder.
    init(root: [UInt8]) throws {
        let shown = String(decoding: root, as: UTF8.self)
        guard FileStatus.isAvailable else { throw ProviderError.cannotSynchronize(reason: "the C library lacks statx") }
        do {
            rootPath = try POSIX.canonical(root)
            let status = try FileStatus(path: rootPath)
            guard status.kind == .directory else {
                throw ProviderError.cannotSynchronize(reason: "\(shown) is not a folder")
            }
            rootDevice = status.device
            rootInode = status.inode
        } catch let failure as POSIXFailure {
            switch failure.code {
            case ENOENT, ENOTDIR: throw ProviderError.cannotSynchronize(reason: "no folder at \(shown)")
            default: throw failure.providerError
            }
        }
    }

    /// The absolute path of `path`, for system calls.
    func absolute(_ path: RelativePath) -> [UInt8] {
        path.isRoot ? rootPath : rootPath + [0x2F] + path.bytes
    }

    /// Throws `serverUnreachable` unless the root path still leads to the folder the provider was
    /// opened on. An unmounted share leaves an empty mount point behind: without this check every
    /// item would look deleted and the engine would delete its copies.
    func checkRoot() throws {
        guard let status = try? FileStatus(path: rootPath), status.device == rootDevice, status.inode == rootInode
        else {
            let shown = String(decoding: rootPath, as: UTF8.self)
            throw ProviderError.serverUnreachable(reason: "\(shown) is gone or is no longer the folder opened")
        }
    }

    /// The identifier of what `status` describes at `path` (see the type's documentation).
    func identifier(of status: FileStatus, at path: RelativePath) -> ItemIdentifier {
        if path.isRoot { return .rootContainer }
        if status.kind == .file && status.linkCount > 1 {
            return ItemIdentifier("p" + path.bytes.map { String(format: "%02x", $0) }.joined())
        }
        var identifier = "i\(status.inode)"
        if let birth = status.birth { identifier += ".\(birth.seconds).\(birth.nanoseconds)" }
        if status.device != rootDevice { identifier += "@\(status.device)" }
        return ItemIdentifier(identifier)
    }

    /// Where `identifier` is now, or `noSuchItem`.
    func locate(_ identifier: ItemIdentifier) throws -> Located {
        if identifier == .rootContainer { return Located(path: .root, status: try FileStatus(path: rootPath)) }
        let started = ContinuousClock.now
        if let found = verified(identifier) { return found }
        if let rebuilt = index.withLock({ $0.rebuilt }), rebuilt > started {
            throw ProviderError.noSuchItem(identifier)
        }
        _ = try walk()
        guard let found = verified(identifier) else { throw ProviderError.noSuchItem(identifier) }
        return found
    }

    /// The identifier of the folder holding `path`.
    func parentIdentifier(of path: RelativePath) throws -> ItemIdentifier {
        let parent = path.parent
        return parent.isRoot ? .rootContainer : identifier(of: try FileStatus(path: absolute(parent)), at: parent)
    }

    /// The item at a located path, or nil when it is of a kind the provider does not show.
    func item(_ located: Located, parent: ItemIdentifier) throws -> Item? {
        let status = located.status
        guard let kind = status.kind else { return nil }
        let target = kind == .symlink ? try POSIX.readLink(absolute(located.path)) : nil
        let identifier = identifier(of: status, at: located.path)
        index.withLock { $0.paths[identifier] = located.path }
        return Item(
            identifier: identifier,
            parentIdentifier: parent,
            filename: located.path.name ?? rootName,
            kind: kind,
            size: target.map { UInt64($0.count) } ?? (kind == .file ? status.size : 0),
            creationDate: status.birth ?? status.change,
            contentModificationDate: status.modification,
            permissions: UInt16(status.mode & 0o7777),
            capabilities: Self.capabilities[kind]!,
            version: Self.version(of: status),
            symlinkTarget: target)
    }

    /// The item at `path` as it is now, with its parent looked up.
    func item(at path: RelativePath) throws -> Item {
        let located = Located(path: path, status: try FileStatus(path: absolute(path)))
        guard let item = try item(located, parent: path.isRoot ? .rootContainer : parentIdentifier(of: path)) else {
            throw ProviderError.cannotSynchronize(reason: "\(path) is neither a file, a folder nor a symlink")
        }
        return item
    }

    /// The names in a folder that may be shown, sorted by their bytes so that pages are stable.
    /// The root's trash folder is not shown (`FolderTrash`), nor the files a creation is written
    /// to before it is renamed into place (`uploadTemporary`): a walk meanwhile would report them
    /// as items of the remote.
    func children(of path: RelativePath) throws -> [Filename] {
        let shown: Set<UInt8> = [UInt8(DT_REG), UInt8(DT_DIR), UInt8(DT_LNK), UInt8(DT_UNKNOWN)]
        let hidden = path.isRoot ? FolderTrash.folderName : nil
        // A name over 255 bytes (NTFS and exFAT hold 255 UTF-16 units, up to 765 bytes) cannot be
        // shown, stat'ed by every tool, nor named in a page: it is left out, the rest is listed.
        return try POSIX.entries(of: absolute(path)).filter {
            shown.contains($0.type) && $0.name != hidden && $0.name.isValid && !Self.isUploadTemporary($0.name)
        }
        .map(\.name).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }

    /// A new name for the file a creation is written to before it is renamed into place.
    static func uploadTemporary() -> Filename { Filename(".fpfs-\(UUID().uuidString).tmp") }

    /// Whether `name` is one `uploadTemporary` makes: `.fpfs-`, a UUID, `.tmp`.
    static func isUploadTemporary(_ name: Filename) -> Bool {
        let bytes = name.bytes
        guard bytes.count == 46, bytes.starts(with: Array(".fpfs-".utf8)), bytes.suffix(4).elementsEqual(".tmp".utf8)
        else { return false }
        return UUID(uuidString: String(decoding: bytes[6..<42], as: UTF8.self)) != nil
    }

    /// The child `name` of the folder at `folder`, or nil when it vanished or is not shown.
    func child(_ name: Filename, of folder: RelativePath, identifiedAs parent: ItemIdentifier) throws -> Item? {
        let path = folder.appending(name)
        do {
            return try item(Located(path: path, status: FileStatus(path: absolute(path))), parent: parent)
        } catch let failure as POSIXFailure where failure.code == ENOENT {
            return nil
        }
    }

    /// Every item below the root (not the root itself), parents before their children, and a fresh
    /// index. Folders that vanish or may not be read during the walk are listed without children.
    func walk() throws -> [Item] {
        let started = ContinuousClock.now
        var items: [Item] = []
        var paths: [ItemIdentifier: RelativePath] = [:]
        var folders: [(path: RelativePath, identifier: ItemIdentifier)] = [(.root, .rootContainer)]
        var next = 0
        while next < folders.count {
            let folder = folders[next]
            next += 1
            let names: [Filename]
            do {
                names = try children(of: folder.path)
            } catch let failure as POSIXFailure
                where !folder.path.isRoot && [ENOENT, ENOTDIR, EACCES].contains(failure.code)
            {
                continue
            }
            for name in names {
                guard let item = try child(name, of: folder.path, identifiedAs: folder.identifier) else { continue }
                items.append(item)
                paths[item.identifier] = folder.path.appending(name)
                if item.kind == .directory { folders.append((folder.path.appending(name), item.identifier)) }
            }
        }
        // Merged, not replaced: items recorded while the walk ran (just created) stay findable.
        // Entries that went stale are harmless, since every use verifies its path.
        index.withLock { index in
            index.paths.merge(paths) { _, walked in walked }
            index.rebuilt = started
        }
        return items
    }

    /// Where `identifier` is now according to the index (or, for a path identifier, its own
    /// bytes), if that path still holds it.
    private func verified(_ identifier: ItemIdentifier) -> Located? {
        guard let path = index.withLock({ $0.paths[identifier] }) ?? Self.path(encodedIn: identifier),
            let status = try? FileStatus(path: absolute(path)), status.kind != nil,
            self.identifier(of: status, at: path) == identifier
        else { return nil }
        return Located(path: path, status: status)
    }

    /// The path a `p…` identifier spells.
    private static func path(encodedIn identifier: ItemIdentifier) -> RelativePath? {
        let hex = Array(identifier.rawValue.utf8)
        guard hex.first == UInt8(ascii: "p"), hex.count % 2 == 1, hex.count > 1 else { return nil }
        var bytes: [UInt8] = []
        for start in stride(from: 1, to: hex.count, by: 2) {
            guard let byte = UInt8(String(decoding: hex[start..<start + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        let components = bytes.split(separator: 0x2F, omittingEmptySubsequences: false).map {
            Filename(bytes: Array($0))
        }
        guard components.allSatisfy(\.isValid) else { return nil }
        return RelativePath(components: components)
    }

    /// Version scheme. Content: size, modification time in nanoseconds and inode of a file or
    /// symlink — any write moves the modification time, a replacement changes the inode; folders
    /// have no content of their own, so a constant. Metadata: permission bits and change time, which
    /// the kernel moves on every change of the inode (mode, owner, links, times, renames).
    static func version(of status: FileStatus) -> ItemVersion {
        let content =
            status.kind == .directory
            ? "d" : "\(status.size).\(status.modification.seconds).\(status.modification.nanoseconds).\(status.inode)"
        let metadata = "\(String(status.mode & 0o7777, radix: 8)).\(status.change.seconds).\(status.change.nanoseconds)"
        return ItemVersion(content: content, metadata: metadata)
    }

    /// Everything a local user may do, which the permission bits then narrow; no trash.
    private static let capabilities: [ItemKind: ItemCapabilities] = [
        .file: [.reading, .writing, .renaming, .reparenting, .deleting],
        .directory: [.reading, .renaming, .reparenting, .deleting, .addingSubItems],
        .symlink: [.reading, .renaming, .reparenting, .deleting],
    ]

    private var rootName: Filename {
        let last = rootPath.split(separator: 0x2F).last.map { Filename(bytes: Array($0)) }
        return last ?? Filename("root")
    }
}
