import FileProviderKit
import Foundation
import Glibc

extension LocalProvider {
    /// Creates a file, folder or symlink named `template.filename` in its parent. A file is written
    /// unnamed (or, where the file system cannot, under a temporary name) and linked or renamed
    /// into place without replacing anything, so nobody sees it half written and an existing name
    /// is never overwritten (`filenameCollision`). With
    /// `.mayAlreadyExist`, an existing item that already is what was asked for is returned instead.
    public func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
        async throws -> Item
    {
        try template.filename.validate()
        let source = contents.map { Array($0.path(percentEncoded: false).utf8) }
        let created = try await request { tree in
            let parent = try tree.locate(template.parentIdentifier)
            guard parent.status.kind == .directory else {
                throw ProviderError.cannotSynchronize(reason: "\(parent.path) is not a folder")
            }
            let path = parent.path.appending(template.filename)
            do {
                try Self.make(template, from: source, at: path, in: tree)
            } catch let failure as POSIXFailure where failure.code == EEXIST {
                let existing = try? tree.item(at: path)
                if options.contains(.mayAlreadyExist), let existing,
                    try Self.matches(
                        template, fields: fields.union(.contents), source: source, current: existing,
                        at: tree.absolute(path))
                {
                    return existing
                }
                throw ProviderError.filenameCollision(existing: existing?.identifier)
            }
            if fields.contains(.contentModificationDate) {
                try POSIX.setModificationTime(
                    tree.absolute(path), template.contentModificationDate)
            }
            return try tree.item(at: path)
        }
        // The engine knows the item now: a walk that no longer finds it reports it deleted.
        history.noteHandedOut([created.identifier])
        return created
    }

    /// Applies a change in place — contents, permissions, a rename or move, the modification
    /// time — keeping the inode and so the identifier. Throws `conflict` with the current item when
    /// the content on disk is no longer `baseVersion`'s; metadata is last-writer-wins, because the
    /// metadata version moves with every inode change (even another hard link) and a conflict copy
    /// for that would only confuse. A rename never replaces an existing name (`filenameCollision`).
    public func modifyItem(
        _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?, options: ModifyItemOptions
    ) async throws -> Item {
        if changedFields.contains(.filename) { try item.filename.validate() }
        let source = contents.map { Array($0.path(percentEncoded: false).utf8) }
        let modified = try await request { tree in
            let located = try tree.locate(item.identifier)
            let current = try tree.item(at: located.path)
            // Only new contents can conflict: a folder's version moves with its children, and
            // metadata is last writer wins (FileProvider's settled points).
            let replacesContents = changedFields.contains(.contents) && current.kind == .file
            guard !replacesContents || current.version.content == baseVersion.content else {
                if options.contains(.mayAlreadyExist),
                    try Self.matches(
                        item, fields: changedFields, source: source, current: current, at: tree.absolute(located.path))
                {
                    return current
                }
                throw ProviderError.conflict(remote: current)
            }
            if changedFields.contains(.symlinkTarget), item.symlinkTarget != current.symlinkTarget {
                throw ProviderError.featureUnsupported  // a symlink's target cannot change in place
            }
            var path = located.path
            if changedFields.contains(.contents), current.kind == .file {
                guard let source else { throw ProviderError.cannotSynchronize(reason: "new contents without a file") }
                try Self.overwrite(
                    tree.absolute(path), with: source, replacing: located.status,
                    keepDistinct: !changedFields.contains(.contentModificationDate))
            }
            if changedFields.contains(.permissions), current.kind != .symlink {
                try POSIX.setPermissions(tree.absolute(path), item.permissions)
            }
            if !changedFields.isDisjoint(with: [.filename, .parentIdentifier]) {
                let folder = changedFields.contains(.parentIdentifier) ? try tree.locate(item.parentIdentifier) : nil
                if let folder, folder.status.kind != .directory {
                    throw ProviderError.cannotSynchronize(reason: "\(folder.path) is not a folder")
                }
                let target = (folder?.path ?? path.parent).appending(
                    changedFields.contains(.filename) ? item.filename : current.filename)
                if target != path {
                    do {
                        try POSIX.renameNoReplace(tree.absolute(path), to: tree.absolute(target))
                    } catch let failure as POSIXFailure where failure.code == EEXIST {
                        throw ProviderError.filenameCollision(existing: (try? tree.item(at: target))?.identifier)
                    }
                    path = target
                }
            }
            if changedFields.contains(.contentModificationDate) {
                try POSIX.setModificationTime(tree.absolute(path), item.contentModificationDate)
            }
            return try tree.item(at: path)
        }
        history.noteHandedOut([modified.identifier])
        return modified
    }

    /// Deletes an item — a folder with everything in it only with `.recursive` — or moves it to the
    /// trash with `.toTrash` (see `FolderTrash`), provided its content is still `baseVersion`'s
    /// (`conflict` otherwise). The root cannot be deleted, and
    /// what the file system refuses to delete is `deletionRejected`.
    public func deleteItem(identifier: ItemIdentifier, baseVersion: ItemVersion?, options: DeleteItemOptions)
        async throws
    {
        guard ![.rootContainer, .trashContainer, .workingSet].contains(identifier) else {
            throw ProviderError.deletionRejected
        }
        try await request { tree in
            let located = try tree.locate(identifier)
            if let baseVersion {
                let current = try tree.item(at: located.path)
                guard current.version.content == baseVersion.content else {
                    throw ProviderError.conflict(remote: current)
                }
            }
            do {
                if options.contains(.toTrash) {
                    try FolderTrash.move(located.path, in: tree, deletedAt: Date())
                } else {
                    try Self.remove(
                        tree.absolute(located.path), isDirectory: located.status.kind == .directory,
                        recursive: options.contains(.recursive))
                }
            } catch let failure as POSIXFailure where [EACCES, EPERM, EROFS, EBUSY].contains(failure.code) {
                throw ProviderError.deletionRejected
            }
        }
    }

    /// Makes the new item at `path`, without its modification time.
    private static func make(_ template: Item, from source: [UInt8]?, at path: RelativePath, in tree: LocalTree) throws
    {
        let absolute = tree.absolute(path)
        switch template.kind {
        case .file:
            if let descriptor = try POSIX.openUnnamed(in: tree.absolute(path.parent), mode: 0o600) {
                let file = OpenFile(descriptor: descriptor, path: absolute)
                if let source { _ = try copy(source, into: file) }
                try POSIX.setPermissions(absolute, template.permissions, descriptor: file.descriptor)
                try POSIX.synchronize(file.descriptor, path: absolute)
                try POSIX.link(file.descriptor, to: absolute)
                return
            }
            let temporary = tree.absolute(path.parent.appending(LocalTree.uploadTemporary()))
            do {
                let file = try OpenFile(path: temporary, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
                if let source { _ = try copy(source, into: file) }
                try POSIX.setPermissions(temporary, template.permissions, descriptor: file.descriptor)
                try POSIX.synchronize(file.descriptor, path: temporary)
                try POSIX.renameNoReplace(temporary, to: absolute)
            } catch {
                try? POSIX.remove(temporary, directory: false)
                throw error
            }
        case .directory:
            try POSIX.makeDirectory(absolute, mode: 0o700)
            try POSIX.setPermissions(absolute, template.permissions)
        case .symlink:
            guard let target = template.symlinkTarget, !target.isEmpty, !target.contains(0) else {
                throw ProviderError.cannotSynchronize(reason: "a symlink needs a target")
            }
            try POSIX.makeSymlink(absolute, target: target)
        }
    }

    /// Replaces a file's bytes in place, so the inode (and identifier) stays. When the kernel's
    /// clock has not moved since the last write and the size is unchanged, the content version
    /// would not change either; `keepDistinct` then moves the modification time on by a nanosecond.
    private static func overwrite(
        _ path: [UInt8], with source: [UInt8], replacing previous: FileStatus, keepDistinct: Bool
    ) throws {
        let file = try OpenFile(path: path, flags: O_WRONLY | O_NOFOLLOW)
        try POSIX.truncate(file.descriptor, to: copy(source, into: file), path: path)
        try POSIX.synchronize(file.descriptor, path: path)
        let written = try FileStatus(descriptor: file.descriptor, path: path)
        guard keepDistinct, LocalTree.version(of: written).content == LocalTree.version(of: previous).content else {
            return
        }
        let old = previous.modification
        try POSIX.setModificationTime(
            path,
            old.nanoseconds < 999_999_999
                ? Timestamp(seconds: old.seconds, nanoseconds: old.nanoseconds + 1)
                : Timestamp(seconds: old.seconds + 1, nanoseconds: 0))
    }

    /// Copies the file at `source` (the engine's, so its failures are not the remote's) to the start
    /// of `file`; returns the length copied.
    private static func copy(_ source: [UInt8], into file: OpenFile) throws -> UInt64 {
        let input: OpenFile
        do {
            input = try OpenFile(path: source, flags: O_RDONLY)
        } catch {
            throw ProviderError.cannotSynchronize(reason: "cannot read the new contents: \(error)")
        }
        var offset: UInt64 = 0
        while true {
            let bytes = try POSIX.read(input.descriptor, at: offset, count: chunkSize, path: source)
            if bytes.isEmpty { return offset }
            try POSIX.write(file.descriptor, bytes, at: offset, path: file.path)
            offset += UInt64(bytes.count)
        }
    }

    /// True when `current` already is what a replayed create or modify asks for: the same kind and
    /// symlink target, each of `fields` the same, and for files with `.contents` the same bytes as
    /// `source` (none meaning empty).
    private static func matches(
        _ requested: Item, fields: ItemFields, source: [UInt8]?, current: Item, at path: [UInt8]
    ) throws -> Bool {
        guard requested.kind == current.kind,
            requested.kind != .symlink || requested.symlinkTarget == current.symlinkTarget
        else { return false }
        if fields.contains(.filename), requested.filename != current.filename { return false }
        if fields.contains(.parentIdentifier), requested.parentIdentifier != current.parentIdentifier { return false }
        if fields.contains(.permissions), requested.kind != .symlink, requested.permissions != current.permissions {
            return false
        }
        if fields.contains(.contentModificationDate),
            requested.contentModificationDate != current.contentModificationDate
        {
            return false
        }
        guard fields.contains(.contents), current.kind == .file else { return true }
        let existing = try OpenFile(path: path, flags: O_RDONLY | O_NOFOLLOW)
        let wanted = try source.map { try OpenFile(path: $0, flags: O_RDONLY) }
        var offset: UInt64 = 0
        while true {
            let have = try POSIX.read(existing.descriptor, at: offset, count: chunkSize, path: existing.path)
            let want =
                try wanted.map { try POSIX.read($0.descriptor, at: offset, count: chunkSize, path: $0.path) } ?? []
            if have != want { return false }
            if have.isEmpty { return true }
            offset += UInt64(have.count)
        }
    }

    /// Removes a file, symlink or empty folder; with `recursive`, a folder's contents first.
    private static func remove(_ path: [UInt8], isDirectory: Bool, recursive: Bool) throws {
        if isDirectory && recursive {
            for entry in try POSIX.entries(of: path) {
                let child = path + [0x2F] + entry.name.bytes
                do {
                    try remove(child, isDirectory: FileStatus(path: child).kind == .directory, recursive: true)
                } catch let failure as POSIXFailure where failure.code == ENOENT {
                    continue  // gone already
                }
            }
        }
        try POSIX.remove(path, directory: isDirectory)
    }
}
