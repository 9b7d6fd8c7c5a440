import FileProviderKit
import Foundation
import NIOHTTP1

extension S3Provider {
    public func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
        async throws -> Item
    {
        try template.filename.validate()
        let parent = S3Path(template.parentIdentifier)
        guard parent.isFolder else { throw ProviderError.noSuchItem(template.parentIdentifier) }
        let created: Item
        switch template.kind {
        case .symlink:
            guard features.contains(.symlinks), let target = template.symlinkTarget else {
                throw ProviderError.featureUnsupported
            }
            created = try await createLink(template, target: target, in: parent, options: options)
        case .directory:
            let path = S3Path(name: template.filename, in: parent, isFolder: true)
            if let file = try await occupant(named: template.filename, in: parent), file != path.identifier {
                throw ProviderError.filenameCollision(existing: file)
            }
            if try await folderExists(path) {
                guard options.contains(.mayAlreadyExist) else {
                    throw ProviderError.filenameCollision(existing: path.identifier)
                }
                created = path.folderItem
            } else {
                try await put(.bytes([]), at: path, precondition: ("If-None-Match", "*"), metadata: template)
                created = path.folderItem
            }
        case .file:
            let path = S3Path(name: template.filename, in: parent, isFolder: false)
            let taken = try await occupant(named: template.filename, in: parent)
            if let taken, taken != path.identifier { throw ProviderError.filenameCollision(existing: taken) }
            do {
                // The HEAD just made stands in for `If-None-Match: *` where the server ignores it.
                if taken != nil { throw ProviderError.versionNoLongerAvailable }
                let body = try await body(of: contents)
                try await put(body, at: path, precondition: ("If-None-Match", "*"), metadata: template)
                if writesAreConditional.withLock({ $0 }) == nil, case .bytes = body {
                    try await learnWhetherWritesAreConditional(resending: body, at: path, metadata: template)
                }
                created = try await head(path)
            } catch ProviderError.versionNoLongerAvailable {
                guard options.contains(.mayAlreadyExist) else {
                    throw ProviderError.filenameCollision(existing: path.identifier)
                }
                created = try await head(path)
            }
        }
        history.noteHandedOut([created.identifier])
        return created
    }

    public func modifyItem(
        _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?, options: ModifyItemOptions
    ) async throws -> Item {
        let source = S3Path(item.identifier)
        guard !source.isRoot else { throw ProviderError.cannotSynchronize(reason: "the root cannot be changed") }
        let moves = !changedFields.isDisjoint(with: [.filename, .parentIdentifier])
        let isLink = item.kind == .symlink
        // POSIX cannot change a link's target in place: the engine deletes and creates.
        if isLink, changedFields.contains(.symlinkTarget) { throw ProviderError.featureUnsupported }
        let newParent = changedFields.contains(.parentIdentifier) ? S3Path(item.parentIdentifier) : source.parent
        // A link lives in its marker object (`--links`).
        let newName =
            !changedFields.contains(.filename)
            ? source.name : isLink ? LinkMarker.markerName(ofLink: item.filename) : item.filename
        try newName.validate()
        let target = S3Path(name: newName, in: newParent, isFolder: source.isFolder)
        let modified: Item
        if source.isFolder {
            if moves, target != source {
                try await moveFolder(source, to: target, resuming: options.contains(.mayAlreadyExist))
            }
            modified = target.folderItem
        } else {
            let writes = changedFields.contains(.contents)
            if moves, target != source {
                let taken = try await occupant(named: newName, in: newParent)
                var copied = false
                if options.contains(.mayAlreadyExist), !writes, taken == target.identifier {
                    copied = try await isCopy(at: target, of: baseVersion)
                }
                if let taken, !copied { throw ProviderError.filenameCollision(existing: taken) }
                if writes {
                    try await requireVersion(baseVersion, of: source)
                    try await put(
                        try await body(of: contents), at: target, precondition: ("If-None-Match", "*"), metadata: item)
                } else {
                    if !copied { try await copy(source, to: target, ifMatching: baseVersion, size: item.size) }
                    await metadata.move(source, to: target)
                    // A copy keeps the old metadata; a chmod or touch journalled with the move goes after.
                    if !changedFields.isDisjoint(with: Self.metadataFields) {
                        try await replaceMetadata(of: target, with: item)
                    }
                }
                if copied {
                    // Gone already, or still the version copied: anything else was written since.
                    if let left = try? await head(source), left.version.content == baseVersion.content {
                        try await delete(source)
                    }
                } else {
                    try await delete(source)
                }
            } else if writes {
                do {
                    if writesAreConditional.withLock({ $0 }) != true {
                        try await requireVersion(baseVersion, of: source)
                    }
                    try await put(
                        try await body(of: contents), at: source,
                        precondition: ("If-Match", S3Path.etag(of: baseVersion)),
                        metadata: item)
                } catch ProviderError.versionNoLongerAvailable {
                    throw ProviderError.conflict(remote: try? await head(source))
                } catch ProviderError.noSuchItem {
                    throw ProviderError.conflict(remote: nil)
                }
            } else if !changedFields.isDisjoint(with: Self.metadataFields) {
                try await replaceMetadata(of: source, with: item)
            }
            let file = try await head(target)
            modified = isLink ? (link(file, target: item.symlinkTarget ?? []) ?? file) : file
        }
        history.noteHandedOut([modified.identifier])
        return modified
    }

    public func deleteItem(identifier: ItemIdentifier, baseVersion: ItemVersion?, options: DeleteItemOptions)
        async throws
    {
        guard !options.contains(.toTrash) else { throw ProviderError.featureUnsupported }
        let path = S3Path(identifier)
        guard !path.isRoot else { throw ProviderError.deletionRejected }
        if path.isFolder {
            let keys = try await keys(under: path)
            guard !keys.isEmpty else { throw ProviderError.noSuchItem(identifier) }
            if !options.contains(.recursive), keys.contains(where: { $0 != path.relative }) {
                throw ProviderError.directoryNotEmpty
            }
            // The marker last: a kill -9 half-way leaves the folder, not orphans without it.
            for key in keys.sorted(by: >) { try await delete(S3Path(relative: key)) }
            return
        }
        if let baseVersion {
            try await requireVersion(baseVersion, of: path)
        } else {
            _ = try await head(path)
        }
        try await delete(path)
    }

    // MARK: Pieces

    /// A symlink made with `--links`: the object `NAME.rclonelink` holding the target. A replay
    /// (`mayAlreadyExist`) takes a marker already there with the same target as its own.
    private func createLink(_ template: Item, target: [UInt8], in parent: S3Path, options: CreateItemOptions)
        async throws -> Item
    {
        let path = S3Path(name: LinkMarker.markerName(ofLink: template.filename), in: parent, isFolder: false)
        if let taken = try await occupant(named: path.name, in: parent) {
            if options.contains(.mayAlreadyExist), taken == path.identifier {
                let existing = try await linked(try await head(path))
                if existing.kind == .symlink, existing.symlinkTarget == target { return existing }
            }
            throw ProviderError.filenameCollision(existing: taken)
        }
        do {
            try await put(.bytes(target), at: path, precondition: ("If-None-Match", "*"), metadata: template)
        } catch ProviderError.versionNoLongerAvailable {
            throw ProviderError.filenameCollision(existing: path.identifier)
        }
        let file = try await head(path)
        return link(file, target: target) ?? file
    }

    /// What a `PUT` sends for a file's contents (nothing for none).
    private func body(of contents: URL?) async throws -> S3Client.Body {
        guard let contents else { return .bytes([]) }
        return try await BlockingIO.run {
            let size = try FileManager.default.attributesOfItem(atPath: contents.path)[.size] as? NSNumber
            let length = size?.int64Value ?? 0
            if length <= 1 << 20 { return .bytes(Array(try Data(contentsOf: contents))) }
            return .file(contents, length: length)
        }
    }

    /// Learns once whether the server honours `If-None-Match: *` on a `PUT`, by sending the small
    /// file just created again with it: a server that honours it answers 412; one that ignores it
    /// writes the same bytes again, and edits then check their base version by a `HEAD` first.
    private func learnWhetherWritesAreConditional(resending body: S3Client.Body, at path: S3Path, metadata item: Item)
        async throws
    {
        do {
            try await put(body, at: path, precondition: ("If-None-Match", "*"), metadata: item)
            writesAreConditional.withLock { $0 = false }
        } catch ProviderError.versionNoLongerAvailable {
            writesAreConditional.withLock { $0 = true }
        }
    }

    /// The fields kept in an object's user metadata (`S3ObjectMetadata`).
    static let metadataFields: ItemFields = [.contentModificationDate, .permissions, .extendedAttributes]

    /// The headers that describe `item` at `path`: its content type and user metadata
    /// (`S3ObjectMetadata`), with the extended attributes last known of the object when the item
    /// carries none (a `PUT` replaces them all), and `more`. Beyond S3's 2 KB of user metadata, a
    /// refusal.
    private func described(_ item: Item, at path: S3Path, more: [(String, String)] = []) throws -> [(String, String)] {
        var kept = S3ObjectMetadata(of: item)
        if kept.attributes == nil, !path.isFolder { kept.attributes = metadata.known(path)?.attributes }
        let headers = kept.headers(isFolder: path.isFolder) + more
        let size = S3ObjectMetadata.userMetadataSize(of: headers)
        guard size <= S3ObjectMetadata.userMetadataLimit else {
            throw ProviderError.notAuthenticated(
                reason: "S3 holds at most 2 KB of user metadata per object, and \(path)'s would be \(size) bytes")
        }
        return headers
    }

    /// A metadata-only change (`touch -d`, `chmod`, `setfattr`): S3 changes an object's metadata
    /// only by rewriting it, so the object is copied onto itself with the new metadata. No
    /// precondition: the copy rewrites whatever the object holds now, so no bytes are lost, and
    /// the head that follows shows the engine a newer version if there is one.
    private func replaceMetadata(of path: S3Path, with item: Item) async throws {
        if Int64(clamping: item.size) > client.configuration.multipartCopyThreshold {
            // Part by part, each naming the ETag a HEAD sees now: parts of two versions never mix.
            let current = try await head(path)
            try await S3MultipartUpload(provider: self).copy(
                key(of: path), etag: S3Path.etag(of: current.version), length: Int64(clamping: current.size),
                to: key(of: path), headers: try described(item, at: path), path: path)
            return
        }
        let headers =
            [
                ("x-amz-copy-source", copySource(of: path)),
                ("x-amz-metadata-directive", "REPLACE"),
            ] + (try described(item, at: path))
        let answer = try await client.sendCollecting(
            .init(method: .PUT, key: key(of: path), headers: headers, isIdempotent: true))
        try checkCopied(answer, doing: "changing the metadata of \(path)", path: path)
    }

    /// The `x-amz-copy-source` of the object at `path`.
    private func copySource(of path: S3Path) -> String {
        "/\(client.configuration.bucket)/" + SigV4Signer.encoded(key(of: path), keepingSlashes: true)
    }

    /// Throws unless a copy's answer is a success: AWS may send an error in the body of a 200.
    private func checkCopied(_ answer: S3Client.Answer, doing what: String, path: S3Path) throws {
        guard answer.status.code == 200, (try? S3XMLElement.parse(answer.body))?.name != "Error" else {
            throw client.error(for: answer, doing: what, identifier: path.identifier)
        }
    }

    /// A `PutObject` with a precondition; 412 (and 409, a concurrent write) become
    /// `versionNoLongerAvailable` for the caller to judge. The item's time, mode and attributes go
    /// into its user metadata (`S3ObjectMetadata`).
    private func put(_ body: S3Client.Body, at path: S3Path, precondition: (String, String), metadata item: Item)
        async throws
    {
        let described = try self.described(item, at: path)
        if case .file(let contents, 0, let length) = body, length > client.configuration.multipartThreshold {
            // Conditional completion is not in RGW 16: the precondition is checked by a HEAD first.
            try await checkBeforeMultipart(precondition, at: path)
            try await S3MultipartUpload(provider: self).upload(
                contents, length: length, key: key(of: path), headers: described, precondition: precondition,
                path: path)
            return
        }
        let headers = [precondition] + described
        let answer = try await client.sendCollecting(
            .init(method: .PUT, key: key(of: path), headers: headers, body: body, isIdempotent: false))
        switch answer.status.code {
        case 200: return
        case 409, 412: throw ProviderError.versionNoLongerAvailable
        default: throw client.error(for: answer, doing: "PUT \(path)", identifier: path.identifier)
        }
    }

    /// What a `PUT`'s precondition would say, asked by a `HEAD`: `versionNoLongerAvailable` for a
    /// taken name (`If-None-Match: *`) or another ETag (`If-Match`).
    private func checkBeforeMultipart(_ precondition: (String, String), at path: S3Path) async throws {
        let current: Item?
        do { current = try await head(path) } catch ProviderError.noSuchItem { current = nil }
        switch precondition.0 {
        case "If-None-Match":
            if current != nil { throw ProviderError.versionNoLongerAvailable }
        default:
            guard let current else { throw ProviderError.noSuchItem(path.identifier) }
            if S3Path.etag(of: current.version) != precondition.1 { throw ProviderError.versionNoLongerAvailable }
        }
    }

    /// Whether the file at `target` is the copy a rename from a file of `version` made: a replay of
    /// a rename whose `CopyObject` (and maybe its `DeleteObject`) the server took before the daemon
    /// stopped finds its own copy there, which is no collision (DECISIONS 266). A `CopyObject`
    /// keeps the ETag on RGW; a copy part by part gets its own, and names the source's in
    /// `copyOfHeader` (DECISIONS 316).
    private func isCopy(at target: S3Path, of version: ItemVersion) async throws -> Bool {
        do {
            let (found, headers) = try await headAnswer(target)
            return found.version.content == version.content
                || headers.first(name: Self.copyOfHeader) == S3Path.etag(of: version)
        } catch ProviderError.noSuchItem {
            return false
        }
    }

    /// The user metadata of a copy made part by part: the ETag of the object it was copied from.
    static let copyOfHeader = "x-amz-meta-fpfs-copy-of"

    /// Throws `conflict` unless the file at `path` is still of `version` (`noSuchItem` when gone).
    private func requireVersion(_ version: ItemVersion, of path: S3Path) async throws {
        let current = try await head(path)
        guard current.version.content == version.content else { throw ProviderError.conflict(remote: current) }
    }

    /// `CopyObject` of the file at `source` (of `size` bytes), provided it is still of `version`;
    /// part by part above the multipart-copy threshold, with the source's metadata.
    private func copy(_ source: S3Path, to target: S3Path, ifMatching version: ItemVersion?, size: UInt64)
        async throws
    {
        if Int64(clamping: size) > client.configuration.multipartCopyThreshold {
            let current = try await head(source)
            if let version, current.version.content != version.content {
                throw ProviderError.conflict(remote: current)
            }
            let etag = S3Path.etag(of: current.version)
            do {
                try await S3MultipartUpload(provider: self).copy(
                    key(of: source), etag: etag, length: Int64(clamping: current.size), to: key(of: target),
                    headers: try described(current, at: target, more: [(Self.copyOfHeader, etag)]), path: target)
            } catch ProviderError.versionNoLongerAvailable {
                throw ProviderError.conflict(remote: try? await head(source))
            }
            return
        }
        var headers = [("x-amz-copy-source", copySource(of: source))]
        if let version { headers.append(("x-amz-copy-source-if-match", S3Path.etag(of: version))) }
        let answer = try await client.sendCollecting(
            .init(method: .PUT, key: key(of: target), headers: headers, isIdempotent: false))
        if answer.status.code == 412 { throw ProviderError.conflict(remote: try? await head(source)) }
        try checkCopied(answer, doing: "copying \(source) to \(target)", path: source)
    }

    /// `DeleteObject`; a key already gone counts as deleted.
    private func delete(_ path: S3Path) async throws {
        let answer = try await client.sendCollecting(.init(method: .DELETE, key: key(of: path)))
        guard [200, 204, 404].contains(answer.status.code) else {
            throw client.error(for: answer, doing: "DELETE \(path)", identifier: path.identifier)
        }
        linkTargets.withLock { $0[path] = nil }
        await metadata.forget(path)
    }

    /// A folder's rename: every key under it copied to the new prefix, then deleted, journalled
    /// (`S3FolderMoves`) so that one a kill -9 cut off is finished at the next mount. With
    /// `resuming` (a replay, or that next mount) a target the move already began is no collision,
    /// and a source already gone with its target there is a move already done.
    func moveFolder(_ source: S3Path, to target: S3Path, resuming: Bool) async throws {
        if let taken = try await occupant(named: target.name, in: target.parent),
            !(resuming && taken == target.identifier)
        {
            throw ProviderError.filenameCollision(existing: taken)
        }
        let objects = try await objects(under: source)
        guard !objects.isEmpty else {
            if resuming, try await folderExists(target) { return }
            throw ProviderError.noSuchItem(source.identifier)
        }
        let journal = S3FolderMoves(provider: self)
        let entry = try await journal.note(source, to: target)
        for object in objects {
            let moved = S3Path(relative: target.relative + object.relative.dropFirst(source.relative.count))
            try await copy(S3Path(relative: object.relative), to: moved, ifMatching: nil, size: object.size)
            await metadata.move(S3Path(relative: object.relative), to: moved)
        }
        for key in objects.map(\.relative).sorted(by: >) { try await delete(S3Path(relative: key)) }
        await journal.forget(entry)
    }

    /// Every key under a folder's prefix (relative to the mount), its marker included.
    func keys(under folder: S3Path) async throws -> [String] { try await objects(under: folder).map(\.relative) }

    /// Every object under a folder's prefix, its marker included.
    func objects(under folder: S3Path) async throws -> [S3ListPage.Object] {
        var objects: [S3ListPage.Object] = []
        var token: String?
        repeat {
            let page = try await listPage(of: folder, token: token, maximumKeys: 1000, flat: true)
            objects += page.objects
            token = page.nextToken
        } while token != nil
        return objects
    }

    /// What holds `name` in `parent` now, as a file (a `HEAD`) or a folder (any key under it).
    private func occupant(named name: Filename, in parent: S3Path) async throws -> ItemIdentifier? {
        let file = S3Path(name: name, in: parent, isFolder: false)
        do {
            return try await head(file).identifier
        } catch ProviderError.noSuchItem {}
        let folder = S3Path(name: name, in: parent, isFolder: true)
        return try await folderExists(folder) ? folder.identifier : nil
    }
}
