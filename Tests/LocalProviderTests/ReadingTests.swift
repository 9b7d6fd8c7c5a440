import FileProviderKit
import Foundation
import LocalProvider
import Testing

@Suite struct ReadingTests {
    @Test func refusesAMissingFolderOrAFileNamingThePath() throws {
        let folder = try TestFolder()
        try folder.write("plain", [1])
        for (url, words) in [
            (folder.url.appending(path: "missing"), "no folder at"),
            (folder.url.appending(path: "plain"), "not a folder"),
        ] {
            #expect {
                try LocalProvider(root: url, options: .init())
            } throws: { error in
                guard case .cannotSynchronize(let reason) = error as? ProviderError else { return false }
                return reason.contains(words) && reason.contains(url.lastPathComponent)
            }
        }
    }

    @Test func rootItemIsTheRootContainer() async throws {
        let folder = try TestFolder()
        let root = try await folder.provider().item(for: .rootContainer)
        #expect(root.identifier == .rootContainer)
        #expect(root.parentIdentifier == .rootContainer)
        #expect(root.kind == .directory)
    }

    @Test func oddNamesSurviveAsBytes() async throws {
        let folder = try TestFolder()
        let names: [[UInt8]] = [
            Array("name with spaces.txt".utf8), Array("ünïcödé 日本語".utf8), Array("-rf".utf8),
            Array(repeating: UInt8(ascii: "n"), count: 255), [0x66, 0xFF, 0xFE, 0x2E, 0x74],  // not UTF-8
        ]
        for (index, name) in names.enumerated() { try folder.write(name, [UInt8(index)]) }
        let provider = try folder.provider()
        let items = try await provider.children(of: .rootContainer)
        #expect(Set(items.map(\.filename.bytes)) == Set(names))
        for item in items {
            let sink = CollectingSink()
            _ = try await provider.fetchContents(for: item.identifier, version: nil, into: sink)
            #expect(sink.contents() == [UInt8(names.firstIndex(of: item.filename.bytes)!)])
            #expect(try await provider.item(for: item.identifier) == item)
        }
    }

    @Test func skipsFIFOsAndDescribesSymlinks() async throws {
        let folder = try TestFolder()
        try folder.makeFIFO("pipe")
        try folder.makeSymlink("link", to: "some/where")
        try folder.makeSymlink("dangling", to: "nowhere")
        let items = try await folder.provider().children(of: .rootContainer)
        #expect(items.map(\.filename) == ["dangling", "link"])
        let link = items[1]
        #expect(link.kind == .symlink)
        #expect(link.symlinkTarget == Array("some/where".utf8))
        #expect(link.size == 10)
    }

    @Test func itemsCarryKindSizeDatesAndPermissions() async throws {
        let folder = try TestFolder()
        try folder.makeDirectory("dir")
        try folder.write("dir/file", Array(repeating: 7, count: 1234))
        try folder.setPermissions("dir/file", 0o4750)
        let provider = try folder.provider()
        let directory = try #require(try await provider.child("dir"))
        #expect(directory.kind == .directory)
        #expect(directory.size == 0)
        #expect(directory.capabilities.contains(.addingSubItems))
        let file = try #require(try await provider.child("file", of: directory.identifier))
        #expect(file.kind == .file)
        #expect(file.size == 1234)
        #expect(file.permissions == 0o4750)
        #expect(file.parentIdentifier == directory.identifier)
        #expect(abs(file.contentModificationDate.date.timeIntervalSinceNow) < 60)
        #expect(file.creationDate != nil)
        #expect(file.version.content.count <= ItemVersion.maximumLength)
        #expect(file.version.metadata.count <= ItemVersion.maximumLength)
    }

    @Test(arguments: [1, 3, 7, 100])
    func pagesAreStableAndComplete(pageSize: Int) async throws {
        let folder = try TestFolder()
        let names = (0..<40).map { String(format: "file-%02d", $0) }.shuffled()
        for name in names { try folder.write(name, []) }
        let provider = try folder.provider()
        let enumerator = try await provider.enumerator(for: .rootContainer)
        var seen: [Filename] = []
        var page = EnumerationPage.initial
        var pages = 0
        while true {
            let result = try await enumerator.enumerateItems(startingAt: page, suggestedPageSize: pageSize)
            #expect(result.items.count <= pageSize)
            seen += result.items.map(\.filename)
            pages += 1
            if pages == 2 {  // a change between pages touches only what it changes
                try folder.write("file-00a", [])
                try folder.remove("file-39")
            }
            guard let next = result.nextPage else { break }
            page = next
        }
        // Sorted, each once; what was added behind the cursor is not seen, what was removed ahead is not.
        let stable = (0..<39).map { String(format: "file-%02d", $0) }
        #expect(seen.map(\.description).filter { $0 != "file-39" } == stable)
        #expect(seen.contains("file-39") == (pageSize == 100))
    }

    @Test func aStalePageIsExpired() async throws {
        let folder = try TestFolder()
        let enumerator = try await folder.provider().enumerator(for: .rootContainer)
        await #expect(throws: ProviderError.pageExpired) {
            try await enumerator.enumerateItems(startingAt: EnumerationPage("garbage/"), suggestedPageSize: 10)
        }
    }

    @Test func identifiersSurviveRenamesAndMovesOnDisk() async throws {
        let folder = try TestFolder()
        try folder.makeDirectory("a")
        try folder.makeDirectory("a/inner")
        try folder.write("a/inner/x.txt", [1, 2, 3])
        try folder.makeDirectory("b")
        let provider = try folder.provider()
        let a = try #require(try await provider.child("a"))
        let inner = try #require(try await provider.child("inner", of: a.identifier))
        let file = try #require(try await provider.child("x.txt", of: inner.identifier))

        try folder.rename("a/inner/x.txt", "b/y.txt")
        try folder.rename("a", "renamed")
        let b = try #require(try await provider.child("b"))
        let moved = try await provider.item(for: file.identifier)
        #expect(moved.filename == "y.txt")
        #expect(moved.parentIdentifier == b.identifier)
        #expect(moved.version.content == file.version.content)
        let renamedInner = try await provider.item(for: inner.identifier)
        #expect(renamedInner.parentIdentifier == a.identifier)
        #expect(try await provider.item(for: a.identifier).filename == "renamed")
    }

    @Test func aDeletedItemIsNoSuchItemAndAReusedInodeIsNotTakenForIt() async throws {
        let folder = try TestFolder()
        try folder.write("gone", [1])
        let provider = try folder.provider()
        let gone = try #require(try await provider.child("gone"))
        try folder.remove("gone")
        try folder.write("newcomer", [2])  // may well get the same inode number
        await #expect(throws: ProviderError.noSuchItem(gone.identifier)) {
            try await provider.item(for: gone.identifier)
        }
        await #expect(throws: ProviderError.self) { try await provider.item(for: ItemIdentifier("nonsense")) }
    }

    @Test func hardLinkedFilesGetDistinctIdentifiers() async throws {
        let folder = try TestFolder()
        try folder.write("one", [1])
        #expect(link(folder.path + "/one", folder.path + "/two") == 0)
        let provider = try folder.provider()
        let items = try await provider.children(of: .rootContainer)
        #expect(Set(items.map(\.identifier)).count == 2)
        for item in items { #expect(try await provider.item(for: item.identifier).filename == item.filename) }
    }

    @Test func versionsFollowContentAndMetadata() async throws {
        let folder = try TestFolder()
        try folder.write("f", [1, 2, 3])
        let provider = try folder.provider()
        let original = try #require(try await provider.child("f"))
        #expect(try await provider.item(for: original.identifier).version == original.version)

        try folder.setPermissions("f", 0o600)
        let chmodded = try await provider.item(for: original.identifier)
        #expect(chmodded.version.content == original.version.content)
        #expect(chmodded.version.metadata != original.version.metadata)

        try folder.write("f", [1, 2, 3, 4])
        let written = try await provider.item(for: original.identifier)
        #expect(written.identifier == original.identifier)
        #expect(written.version.content != original.version.content)
    }

    @Test func aVanishedRootIsServerUnreachable() async throws {
        let folder = try TestFolder()
        try folder.write("f", [1])
        let provider = try folder.provider()
        let file = try #require(try await provider.child("f"))
        try FileManager.default.moveItem(at: folder.url, to: folder.url.appendingPathExtension("away"))
        defer { try? FileManager.default.removeItem(at: folder.url.appendingPathExtension("away")) }
        // What an unmounted share leaves behind: an empty folder at the same path.
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: false)
        for identifier in [ItemIdentifier.rootContainer, file.identifier] {
            await #expect {
                try await provider.item(for: identifier)
            } throws: { error in
                if case .serverUnreachable = error as? ProviderError { true } else { false }
            }
        }
    }
}
