import FileProviderKit
import Foundation
import Glibc

/// The folder remote's trash (`fpfs mount --trash`), in the freedesktop.org layout of a top
/// directory, the remote folder being the top: `ROOT/.Trash-UID/files/NAME` holds the item and
/// `ROOT/.Trash-UID/info/NAME.trashinfo` says where it was (`Path=`, relative to the root) and when
/// it was deleted. Kept inside the remote folder so that a move is a rename on one file system,
/// and hidden from the mount (`LocalTree.children`), as desktops hide theirs.
enum FolderTrash {
    /// `.Trash-UID` of the user the provider runs as.
    static var folderName: Filename { Filename(".Trash-\(getuid())") }

    /// Moves the item at `path` into the trash under a name no other trashed item has (`NAME`,
    /// else `NAME.2`, `NAME.3` …). Blocks.
    static func move(_ path: RelativePath, in tree: LocalTree, deletedAt date: Date) throws {
        guard let name = path.name else { throw ProviderError.deletionRejected }
        let trash = tree.absolute(RelativePath(components: [folderName]))
        for folder in [trash, trash + Array("/files".utf8), trash + Array("/info".utf8)] {
            let made = mkdir(folder.map { CChar(bitPattern: $0) } + [0], 0o700)
            if made != 0, errno != EEXIST { throw POSIXFailure("mkdir", folder) }
        }
        let info = infoText(for: path, deletedAt: date)
        let source = tree.absolute(path)
        for attempt in 1...Int.max {
            let suffix = attempt == 1 ? [] : Array(".\(attempt)".utf8)
            let taken = Array(name.bytes.prefix(Filename.maximumLength - 10 - suffix.count)) + suffix
            let infoPath = trash + Array("/info/".utf8) + taken + Array(".trashinfo".utf8)
            guard try claim(infoPath, info: info) else { continue }
            let moved: Bool
            do { moved = try moveIn(source, to: trash + Array("/files/".utf8) + taken) } catch {
                try? POSIX.remove(infoPath, directory: false)
                throw error
            }
            if moved { return }
            try? POSIX.remove(infoPath, directory: false)
        }
    }

    /// Creates the info file exclusively — the spec's way to claim a name; false when taken.
    private static func claim(_ infoPath: [UInt8], info: [UInt8]) throws -> Bool {
        let result = Result { () throws(POSIXFailure) in
            try POSIX.open(infoPath, flags: O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600)
        }
        switch result {
        case .failure(let failure) where failure.code == EEXIST: return false
        case .failure(let failure): throw failure
        case .success(let descriptor):
            defer { close(descriptor) }
            try POSIX.write(descriptor, info, at: 0, path: infoPath)
            return true
        }
    }

    /// Moves the item to its claimed name; false when an item holds that name (and its info file
    /// had been lost).
    private static func moveIn(_ source: [UInt8], to target: [UInt8]) throws -> Bool {
        switch Result(catching: { () throws(POSIXFailure) in try POSIX.renameNoReplace(source, to: target) }) {
        case .success: return true
        case .failure(let failure) where failure.code == EEXIST: return false
        case .failure(let failure): throw failure
        }
    }

    /// `[Trash Info]` with the path percent-encoded as the spec asks and the local time.
    private static func infoText(for path: RelativePath, deletedAt date: Date) -> [UInt8] {
        let unreserved = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~/".utf8))
        let encoded = path.bytes.map {
            unreserved.contains($0) ? String(UnicodeScalar($0)) : String(format: "%%%02X", $0)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        return Array("[Trash Info]\nPath=\(encoded.joined())\nDeletionDate=\(formatter.string(from: date))\n".utf8)
    }
}
