import FileProviderKit

/// The write-half checks, each on items of its own in the scratch directory, created and removed
/// through the provider itself. A provider whose `createItem` is `featureUnsupported` skips them.
extension ProviderConformance {
    func verifyCreateItems() async throws -> ConformanceOutcome {
        let scratch = try await resolve(ConformanceFixture.scratchPath).identifier
        let contents = ConformanceFixture.pattern(count: 5000, seed: 4)
        let (fileName, directoryName, linkName) = (
            scratchName(.createItems, "file.bin"), scratchName(.createItems, "dir"), scratchName(.createItems, "link")
        )
        let file: Item
        do { file = try await create(fileName, .file, in: scratch, contents: contents) } catch let violation
            as Violation where violation.isUnsupported
        {
            return .skipped(reason: "the provider does not create items")
        }
        let directory = try await create(directoryName, .directory, in: scratch)
        var created = [(file, fileName, ItemKind.file), (directory, directoryName, .directory)]
        if fixture.hasSymlinks {
            let link = try await create(linkName, .symlink, in: scratch, target: "some/where")
            try expect(link.symlinkTarget == Array("some/where".utf8), "a created symlink points elsewhere")
            created.append((link, linkName, .symlink))
        } else {
            try await expectError(
                "creating a symlink on a remote without them", "featureUnsupported",
                matching: {
                    $0 == .featureUnsupported
                }
            ) { _ = try await create(linkName, .symlink, in: scratch, target: "some/where") }
        }
        for (item, name, kind) in created {
            try expect(
                !item.identifier.rawValue.hasPrefix("fpfs-conformance-local-"),
                "createItem(\(name)) returned the engine's identifier; it must return the remote's")
            try expect(item.kind == kind, "createItem(\(name)) returned a \(item.kind), not a \(kind)")
            try expect(item.filename == Filename(name), "createItem(\(name)) returned filename \(item.filename)")
            try expect(item.parentIdentifier == scratch, "createItem(\(name)) returned parent \(item.parentIdentifier)")
            let looked = try await attempt("item(for: created \(name))") {
                try await provider.item(for: item.identifier)
            }
            try expect(looked.version == item.version, "item(for:) of a created item reports another version")
        }
        try expect(file.size == UInt64(contents.count), "createItem returned size \(file.size), not \(contents.count)")
        try expect(try await fetch(file.identifier).bytes == contents, "a created file fetches other bytes")
        let listed = Set(try await list(scratch).map(\.identifier))
        try expect(
            listed.isSuperset(of: created.map(\.0.identifier)),
            "created items are missing from their directory's listing")
        for (item, _, _) in created { try await cleanUp(item) }
        return .passed
    }

    func verifyModifyItem() async throws -> ConformanceOutcome {
        let scratch = try await resolve(ConformanceFixture.scratchPath).identifier
        let name = scratchName(.modifyItem, "file.bin")
        let original: Item
        do { original = try await create(name, .file, in: scratch, contents: Array("version one".utf8)) } catch let
            violation as Violation where violation.isUnsupported
        {
            return .skipped(reason: "the provider does not create items")
        }
        let contents = ConformanceFixture.pattern(count: 7000, seed: 5)
        let modified = try await attempt("modifyItem(contents) with the current base version") {
            try await modifyContents(of: original, to: contents, baseVersion: original.version)
        }
        try expect(modified.version.content != original.version.content, "new contents kept the content version")
        try expect(modified.size == UInt64(contents.count), "modifyItem returned size \(modified.size)")
        try expect(try await fetch(modified.identifier).bytes == contents, "a modified file fetches the old bytes")

        let newName = scratchName(.modifyItem, "renamed.bin")
        var rename = modified
        rename.filename = Filename(newName)
        let renamed = try await attempt("modifyItem(filename)") {
            try await provider.modifyItem(
                rename, baseVersion: modified.version, changedFields: .filename, contents: nil, options: [])
        }
        try expect(renamed.filename == Filename(newName), "a rename returned filename \(renamed.filename)")
        try expect(renamed.version.content == modified.version.content, "a rename changed the content version")
        let names = try await list(scratch).map(\.filename)
        try expect(
            names.contains(Filename(newName)) && !names.contains(Filename(name)), "the listing does not show the rename"
        )
        try await cleanUp(renamed)
        return .passed
    }

    func verifyStaleBaseVersion() async throws -> ConformanceOutcome {
        let scratch = try await resolve(ConformanceFixture.scratchPath).identifier
        let original: Item
        do {
            original = try await create(
                scratchName(.staleBaseVersion, "file"), .file, in: scratch, contents: [1, 2, 3])
        } catch let violation as Violation where violation.isUnsupported {
            return .skipped(reason: "the provider does not create items")
        }
        let current = try await attempt("modifyItem(contents)") {
            try await modifyContents(
                of: original, to: Array("the remote's newer contents".utf8), baseVersion: original.version)
        }
        var remote: Item?
        try await expectError(
            "modifyItem with a stale base version", "conflict",
            matching: {
                guard case .conflict(let item) = $0 else { return false }
                remote = item
                return true
            }
        ) {
            _ = try await modifyContents(of: original, to: [9, 9, 9], baseVersion: original.version)
        }
        if let remote {
            try expect(
                remote.version == current.version,
                "conflict(remote:) carries version \(remote.version), not the remote's")
        }
        try await expectError(
            "deleteItem with a stale base version", "conflict",
            matching: {
                if case .conflict = $0 { true } else { false }
            }
        ) {
            try await provider.deleteItem(identifier: original.identifier, baseVersion: original.version, options: [])
        }
        try expect(
            try await fetch(current.identifier).bytes == Array("the remote's newer contents".utf8),
            "a refused change still overwrote the remote")
        try await cleanUp(current)
        return .passed
    }

    func verifyFilenameCollision() async throws -> ConformanceOutcome {
        let scratch = try await resolve(ConformanceFixture.scratchPath).identifier
        let name = scratchName(.filenameCollision, "taken")
        let taken: Item
        do { taken = try await create(name, .file, in: scratch, contents: [1]) } catch let violation as Violation
            where violation.isUnsupported
        {
            return .skipped(reason: "the provider does not create items")
        }
        let isCollision: (ProviderError) -> Bool = { if case .filenameCollision = $0 { true } else { false } }
        try await expectError("creating a file over a taken name", "filenameCollision", matching: isCollision) {
            _ = try await create(name, .file, in: scratch, contents: [2])
        }
        try await expectError("creating a directory over a taken name", "filenameCollision", matching: isCollision) {
            _ = try await create(name, .directory, in: scratch)
        }
        let folder = try await create(scratchName(.filenameCollision, "folder"), .directory, in: scratch)
        try await expectError("creating a file over a taken directory name", "filenameCollision", matching: isCollision)
        {
            _ = try await create(folder.filename.description, .file, in: scratch, contents: [4])
        }
        let other = try await create(scratchName(.filenameCollision, "other"), .file, in: scratch, contents: [3])
        var rename = other
        rename.filename = Filename(name)
        try await expectError("renaming onto a taken name", "filenameCollision", matching: isCollision) {
            _ = try await provider.modifyItem(
                rename, baseVersion: other.version, changedFields: .filename, contents: nil, options: [])
        }
        var folderRename = folder
        folderRename.filename = Filename(name)
        try await expectError("renaming a directory onto a taken file name", "filenameCollision", matching: isCollision)
        {
            _ = try await provider.modifyItem(
                folderRename, baseVersion: folder.version, changedFields: .filename, contents: nil, options: [])
        }
        try expect(
            try await fetch(taken.identifier).bytes == [1], "a refused create or rename overwrote the taken name")
        for item in [taken, folder, other] { try await cleanUp(item) }
        return .passed
    }

    func verifyDeleteItems() async throws -> ConformanceOutcome {
        let scratch = try await resolve(ConformanceFixture.scratchPath).identifier
        let name = scratchName(.deleteItems, "dir")
        let directory: Item
        do { directory = try await create(name, .directory, in: scratch) } catch let violation as Violation
            where violation.isUnsupported
        {
            return .skipped(reason: "the provider does not create items")
        }
        let child = try await create("child", .file, in: directory.identifier, contents: [1])
        let isNoSuchItem: (ProviderError) -> Bool = { if case .noSuchItem = $0 { true } else { false } }
        try await expectError(
            "deleting a non-empty directory without .recursive", "directoryNotEmpty",
            matching: {
                $0 == .directoryNotEmpty
            }
        ) {
            let current = try await provider.item(for: directory.identifier)
            try await provider.deleteItem(identifier: directory.identifier, baseVersion: current.version, options: [])
        }
        try await attempt("deleteItem(file)") {
            try await provider.deleteItem(identifier: child.identifier, baseVersion: child.version, options: [])
        }
        try await expectError("item(for:) of a deleted file", "noSuchItem", matching: isNoSuchItem) {
            _ = try await provider.item(for: child.identifier)
        }
        let grandchild = try await create("again", .file, in: directory.identifier, contents: [2])
        try await attempt("deleteItem(directory, .recursive)") {
            let current = try await provider.item(for: directory.identifier)
            try await provider.deleteItem(
                identifier: directory.identifier, baseVersion: current.version, options: .recursive)
        }
        for item in [directory, grandchild] {
            try await expectError("item(for:) of a recursively deleted item", "noSuchItem", matching: isNoSuchItem) {
                _ = try await provider.item(for: item.identifier)
            }
        }
        try expect(
            !(try await list(scratch).contains { $0.identifier == directory.identifier }),
            "a deleted directory is still listed")
        return .passed
    }
}
