import FileProviderKit
import Foundation
import LocalProvider
import Testing

@Suite struct WritingTests {
    /// An item as the engine would hand it to `createItem`: a local identifier, the fields it sets.
    static func template(
        _ name: String, _ kind: ItemKind, in parent: ItemIdentifier = .rootContainer, permissions: UInt16? = nil,
        target: String? = nil
    ) -> Item {
        Item(
            identifier: ItemIdentifier("local-\(UUID())"), parentIdentifier: parent, filename: Filename(name),
            kind: kind,
            contentModificationDate: Timestamp(seconds: 1_000_000_000), permissions: permissions,
            version: ItemVersion(content: [], metadata: []), symlinkTarget: target.map { Array($0.utf8) })
    }

    @Test func createsFilesFoldersAndSymlinks() async throws {
        let folder = try TestFolder()
        let provider = try folder.provider()
        let contents = try folder.contentsFile([1, 2, 3])
        let file = try await provider.createItem(
            basedOn: Self.template("new file", .file, permissions: 0o640),
            fields: [.contents, .contentModificationDate],
            contents: contents, options: [])
        #expect(try folder.read("new file") == [1, 2, 3])
        #expect(file.size == 3 && file.permissions == 0o640 && file.parentIdentifier == .rootContainer)
        #expect(file.contentModificationDate == Timestamp(seconds: 1_000_000_000))
        #expect(try await provider.item(for: file.identifier) == file)

        let directory = try await provider.createItem(
            basedOn: Self.template("dir", .directory, permissions: 0o700), fields: [], contents: nil, options: [])
        #expect(directory.kind == .directory && directory.permissions == 0o700)
        let nested = try await provider.createItem(
            basedOn: Self.template("-empty", .file, in: directory.identifier), fields: [], contents: nil, options: [])
        #expect(nested.parentIdentifier == directory.identifier && nested.size == 0)

        let link = try await provider.createItem(
            basedOn: Self.template("link", .symlink, target: "dir/-empty"), fields: [], contents: nil, options: [])
        #expect(link.symlinkTarget == Array("dir/-empty".utf8))
        #expect(try await provider.children(of: .rootContainer).count == 3)  // no temporary files left
    }

    /// A creation's bytes are written to a file with no name and linked into place: a kill -9
    /// half-way leaves nothing in the remote's folder, where a named temporary stayed for good
    /// (issue 51, the checker's seeds 3015 and 3030). Red before: the watcher saw `.fpfs-….tmp`.
    @Test func aCreationShowsNoNameUntilItsBytesAreAllThere() async throws {
        let folder = try TestFolder()
        let provider = try folder.provider()
        let contents = try folder.contentsFile([UInt8](repeating: 7, count: 64 << 20))
        defer { try? FileManager.default.removeItem(at: contents) }
        let watching = Watcher(folder.path)
        let file = try await provider.createItem(
            basedOn: Self.template("large", .file), fields: [.contents], contents: contents, options: [])
        let seen = watching.stop()
        #expect(file.size == 64 << 20)
        #expect(seen.isSubset(of: ["large"]), "the folder showed \(seen.sorted()) while the file was written")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["large"])
    }

    @Test func createsNamesThatAreNotUTF8() async throws {
        let folder = try TestFolder()
        let provider = try folder.provider()
        var template = Self.template("x", .file)
        template.filename = Filename(bytes: [0x61, 0xFF, 0x62])
        let item = try await provider.createItem(basedOn: template, fields: [], contents: nil, options: [])
        #expect(item.filename.bytes == [0x61, 0xFF, 0x62])
        #expect(try await provider.children(of: .rootContainer).map(\.filename.bytes) == [[0x61, 0xFF, 0x62]])
    }

    @Test func anExistingNameIsACollisionUnlessAReplayFindsItDone() async throws {
        let folder = try TestFolder()
        try folder.write("taken", [9, 9])
        let provider = try folder.provider()
        let existing = try #require(try await provider.child("taken"))
        let same = try folder.contentsFile([9, 9])
        for kind in [ItemKind.file, .directory, .symlink] {
            await #expect(throws: ProviderError.filenameCollision(existing: existing.identifier)) {
                try await provider.createItem(
                    basedOn: Self.template("taken", kind, target: "x"), fields: [.contents], contents: same, options: []
                )
            }
        }
        let replayed = try await provider.createItem(
            basedOn: Self.template("taken", .file), fields: [.contents], contents: same, options: .mayAlreadyExist)
        #expect(replayed.identifier == existing.identifier)
        await #expect(throws: ProviderError.filenameCollision(existing: existing.identifier)) {
            try await provider.createItem(
                basedOn: Self.template("taken", .file), fields: [.contents], contents: folder.contentsFile([1]),
                options: .mayAlreadyExist)
        }
        #expect(try folder.read("taken") == [9, 9])
    }

    @Test func createInAMissingFolderIsNoSuchItem() async throws {
        let folder = try TestFolder()
        await #expect(throws: ProviderError.noSuchItem(ItemIdentifier("i1"))) {
            try await folder.provider().createItem(
                basedOn: Self.template("x", .file, in: ItemIdentifier("i1")), fields: [], contents: nil, options: [])
        }
    }

    @Test func renamesAndMovesKeepTheIdentifierAndNeverReplace() async throws {
        let folder = try TestFolder()
        try folder.write("a", [1])
        try folder.write("b", [2])
        try folder.makeDirectory("dir")
        let provider = try folder.provider()
        var a = try #require(try await provider.child("a"))
        let dir = try #require(try await provider.child("dir"))

        a.filename = "b"
        await #expect(throws: ProviderError.filenameCollision(existing: try await provider.child("b")?.identifier)) {
            try await provider.modifyItem(
                a, baseVersion: a.version, changedFields: .filename, contents: nil, options: [])
        }
        a.filename = "moved"
        a.parentIdentifier = dir.identifier
        let moved = try await provider.modifyItem(
            a, baseVersion: a.version, changedFields: [.filename, .parentIdentifier], contents: nil, options: [])
        #expect(moved.identifier == a.identifier)
        #expect(moved.parentIdentifier == dir.identifier && moved.filename == "moved")
        #expect(try folder.read("dir/moved") == [1])
        #expect(!folder.exists("a"))
        #expect(try folder.read("b") == [2])
    }

    @Test func modifiesContentsInPlaceAndMetadata() async throws {
        let folder = try TestFolder()
        try folder.write("f", [1, 2, 3, 4, 5])
        let inode = try folder.inode("f")
        let provider = try folder.provider()
        var item = try #require(try await provider.child("f"))

        let replaced = try await provider.modifyItem(
            item, baseVersion: item.version, changedFields: .contents, contents: folder.contentsFile([9, 9, 9, 9, 9]),
            options: [])
        #expect(try folder.read("f") == [9, 9, 9, 9, 9])
        #expect(try folder.inode("f") == inode)
        #expect(replaced.identifier == item.identifier)
        #expect(replaced.version.content != item.version.content)  // even with the same size at once

        let shorter = try await provider.modifyItem(
            replaced, baseVersion: replaced.version, changedFields: .contents, contents: folder.contentsFile([7]),
            options: [])
        #expect(try folder.read("f") == [7])
        #expect(shorter.size == 1)

        item = shorter
        item.permissions = 0o600
        item.contentModificationDate = Timestamp(seconds: 1_234_567_890, nanoseconds: 999_999_999)
        let touched = try await provider.modifyItem(
            item, baseVersion: shorter.version, changedFields: [.permissions, .contentModificationDate], contents: nil,
            options: [])
        #expect(touched.permissions == 0o600)
        #expect(touched.contentModificationDate == Timestamp(seconds: 1_234_567_890, nanoseconds: 999_999_999))
    }

    @Test func aStaleBaseVersionIsAConflict() async throws {
        let folder = try TestFolder()
        try folder.write("f", [1])
        let provider = try folder.provider()
        let stale = try #require(try await provider.child("f"))
        try folder.write("f", [2, 2])
        let current = try await provider.item(for: stale.identifier)
        await #expect(throws: ProviderError.conflict(remote: current)) {
            try await provider.modifyItem(
                stale, baseVersion: stale.version, changedFields: .contents, contents: folder.contentsFile([3]),
                options: [])
        }
        await #expect(throws: ProviderError.conflict(remote: current)) {
            try await provider.deleteItem(identifier: stale.identifier, baseVersion: stale.version, options: [])
        }
        #expect(try folder.read("f") == [2, 2])
    }

    @Test func aReplayedModificationAlreadyDoneSucceeds() async throws {
        let folder = try TestFolder()
        try folder.write("f", [1])
        let provider = try folder.provider()
        let before = try #require(try await provider.child("f"))
        let contents = try folder.contentsFile([5, 5])
        _ = try await provider.modifyItem(
            before, baseVersion: before.version, changedFields: .contents, contents: contents, options: [])
        let replayed = try await provider.modifyItem(
            before, baseVersion: before.version, changedFields: .contents, contents: contents, options: .mayAlreadyExist
        )
        #expect(replayed.identifier == before.identifier && replayed.size == 2)
    }

    @Test func deletesFilesAndFoldersOnlyRecursivelyWhenAsked() async throws {
        let folder = try TestFolder()
        try folder.write("f", [1])
        try folder.makeDirectory("full")
        try folder.makeDirectory("full/sub")
        try folder.write("full/sub/x", [1])
        try folder.makeFIFO("full/pipe")
        let provider = try folder.provider()
        let file = try #require(try await provider.child("f"))
        let full = try #require(try await provider.child("full"))

        try await provider.deleteItem(identifier: file.identifier, baseVersion: file.version, options: [])
        #expect(!folder.exists("f"))
        await #expect(throws: ProviderError.directoryNotEmpty) {
            try await provider.deleteItem(identifier: full.identifier, baseVersion: nil, options: [])
        }
        try await provider.deleteItem(identifier: full.identifier, baseVersion: full.version, options: .recursive)
        #expect(!folder.exists("full"))
        await #expect(throws: ProviderError.noSuchItem(file.identifier)) {
            try await provider.deleteItem(identifier: file.identifier, baseVersion: nil, options: [])
        }
        await #expect(throws: ProviderError.deletionRejected) {
            try await provider.deleteItem(identifier: .rootContainer, baseVersion: nil, options: .recursive)
        }
    }
}

/// Lists a folder over and over on a thread of its own, collecting every name it ever shows.
private final class Watcher: @unchecked Sendable {
    private let lock = NSLock()
    private var names: Set<String> = []
    private var running = true
    private let done = DispatchSemaphore(value: 0)

    init(_ path: String) {
        Thread {
            while self.lock.withLock({ self.running }) {
                let listed = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                self.lock.withLock { self.names.formUnion(listed) }
            }
            self.done.signal()
        }.start()
    }

    /// Stops the thread; every name it saw.
    func stop() -> Set<String> {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { names }
    }
}
