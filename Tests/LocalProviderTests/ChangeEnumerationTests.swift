import FileProviderKit
import Foundation
import LocalProvider
import Testing

@Suite struct ChangeEnumerationTests {
    /// A folder with a few items of each kind, some nested.
    static func populated() throws -> TestFolder {
        let folder = try TestFolder()
        try folder.makeDirectory("docs")
        try folder.makeDirectory("docs/deep")
        try folder.write("docs/deep/leaf", [1])
        try folder.write("docs/keep", [2])
        try folder.write("modify-me", [3])
        try folder.write("rename-me", [4])
        try folder.write("delete-me", [5])
        try folder.makeDirectory("delete-dir")
        try folder.write("delete-dir/inside", [6])
        try folder.makeSymlink("link", to: "docs/keep")
        return folder
    }

    @Test(arguments: [1, 4, 1000])
    func workingSetListsEverythingParentsFirst(pageSize: Int) async throws {
        let folder = try Self.populated()
        let provider = try folder.provider()
        let items = try await Enumeration.allItems(of: provider.enumerator(for: .workingSet), pageSize: pageSize)
        #expect(items.count == 10)
        #expect(Set(items.map(\.identifier)).count == 10)
        var known: Set<ItemIdentifier> = [.rootContainer]
        for item in items {
            #expect(known.contains(item.parentIdentifier), "\(item.filename) listed before its parent")
            known.insert(item.identifier)
            #expect(try await provider.item(for: item.identifier) == item)
        }
    }

    @Test("a creation's temporary file, before its rename into place, is in no listing or walk")
    func creationTemporariesAreNotListed() async throws {
        let folder = try Self.populated()
        try folder.write("docs/.fpfs-\(UUID().uuidString).tmp", [7])
        try folder.write(".fpfs-not-a-uuid.tmp", [8])
        let provider = try folder.provider()
        let walked = try await Enumeration.allItems(of: provider.enumerator(for: .workingSet), pageSize: 100)
        #expect(walked.count == 11)
        #expect(walked.contains { $0.filename == Filename(".fpfs-not-a-uuid.tmp") })
        let docs = try #require(walked.first { $0.filename == Filename("docs") })
        #expect(
            try await provider.children(of: docs.identifier).map(\.filename).sorted { $0.description < $1.description }
                == [
                    Filename("deep"), Filename("keep"),
                ])
    }

    @Test func reportsCreationsModificationsRenamesMovesAndDeletions() async throws {
        let folder = try Self.populated()
        let provider = try folder.provider()
        let workingSet = try await provider.enumerator(for: .workingSet)
        let before = try await Enumeration.allItems(of: workingSet, pageSize: 100)
        func identifier(_ name: Filename) -> ItemIdentifier { before.first { $0.filename == name }!.identifier }
        let anchor = try #require(try await workingSet.currentSyncAnchor())
        #expect(anchor.bytes.count <= SyncAnchor.maximumLength)

        try folder.write("created", [7])
        try folder.write("modify-me", [3, 3, 3])
        try folder.rename("rename-me", "renamed")
        try folder.rename("docs/keep", "kept")
        try folder.remove("delete-me")
        try folder.remove("delete-dir")

        let changes = try await Enumeration.allChanges(of: workingSet, from: anchor)
        let updated = Dictionary(uniqueKeysWithValues: changes.updated.map { ($0.filename, $0) })
        #expect(Set(updated.keys).isSuperset(of: ["created", "modify-me", "renamed", "kept"]))
        #expect(updated["modify-me"]?.identifier == identifier("modify-me"))
        #expect(updated["modify-me"]?.size == 3)
        #expect(updated["renamed"]?.identifier == identifier("rename-me"))
        #expect(updated["kept"]?.identifier == identifier("keep"))
        #expect(updated["kept"]?.parentIdentifier == .rootContainer)
        #expect(updated["leaf"] == nil)
        // Children before their folder.
        #expect(Set(changes.deleted) == [identifier("inside"), identifier("delete-dir"), identifier("delete-me")])
        #expect(
            changes.deleted.firstIndex(of: identifier("inside"))! < changes.deleted.firstIndex(
                of: identifier("delete-dir"))!)

        let again = try await workingSet.enumerateChanges(from: changes.anchor, suggestedPageSize: 100)
        #expect(again.updated.isEmpty && again.deleted.isEmpty && !again.moreComing)
        #expect(again.nextAnchor == changes.anchor)
    }

    @Test func anItemListedAndDeletedBetweenAnchorsIsReportedDeleted() async throws {
        let folder = try TestFolder()
        let provider = try folder.provider()
        let workingSet = try await provider.enumerator(for: .workingSet)
        let anchor = try #require(try await workingSet.currentSyncAnchor())
        try folder.write("brief", [1])
        let brief = try #require(try await provider.child("brief"))  // the engine learns of it by a listing
        try folder.remove("brief")
        let changes = try await Enumeration.allChanges(of: workingSet, from: anchor)
        #expect(changes.deleted == [brief.identifier])
        #expect(changes.updated.isEmpty)
    }

    @Test func longListsOfChangesComeInBatches() async throws {
        let folder = try TestFolder()
        let provider = try folder.provider()
        let workingSet = try await provider.enumerator(for: .workingSet)
        let anchor = try #require(try await workingSet.currentSyncAnchor())
        for index in 0..<10 { try folder.write("file-\(index)", []) }
        let first = try await workingSet.enumerateChanges(from: anchor, suggestedPageSize: 3)
        #expect(first.updated.count == 3)
        #expect(first.moreComing)
        let all = try await Enumeration.allChanges(of: workingSet, from: anchor, pageSize: 3)
        #expect(Set(all.updated.map(\.filename.description)) == Set((0..<10).map { "file-\($0)" }))
    }

    @Test func anchorsSurviveARestartWithTheSameStateDirectory() async throws {
        let folder = try Self.populated()
        let state = FileManager.default.temporaryDirectory.appending(path: "fpfs-state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: state) }
        let anchor = try #require(
            try await folder.provider(.init(stateDirectory: state)).enumerator(for: .workingSet).currentSyncAnchor())

        try folder.write("while-away", [1])
        let restarted = try await folder.provider(.init(stateDirectory: state)).enumerator(for: .workingSet)
        let changes = try await Enumeration.allChanges(of: restarted, from: anchor)
        #expect(changes.updated.map(\.filename) == ["while-away"])

        let inMemory = try await folder.provider().enumerator(for: .workingSet)
        await #expect(throws: ProviderError.syncAnchorExpired) {
            try await inMemory.enumerateChanges(from: anchor, suggestedPageSize: 10)
        }
    }

    @Test func oldAndForeignAnchorsAreExpired() async throws {
        let folder = try TestFolder()
        let workingSet = try await folder.provider().enumerator(for: .workingSet)
        let first = try #require(try await workingSet.currentSyncAnchor())
        var anchor = first
        for index in 0..<9 {  // more snapshots than are kept
            try folder.write("file-\(index)", [])
            anchor = try await Enumeration.allChanges(of: workingSet, from: anchor).anchor
        }
        _ = try await workingSet.enumerateChanges(from: anchor, suggestedPageSize: 10)
        for stale in [first, try SyncAnchor("somebody else's"), try SyncAnchor(Array(first.bytes) + [0x31])] {
            await #expect(throws: ProviderError.syncAnchorExpired) {
                try await workingSet.enumerateChanges(from: stale, suggestedPageSize: 10)
            }
        }
    }

    @Test func directoryEnumeratorsLeaveChangesToTheWorkingSet() async throws {
        let folder = try TestFolder()
        let enumerator = try await folder.provider().enumerator(for: .rootContainer)
        #expect(try await enumerator.currentSyncAnchor() == nil)
        await #expect(throws: ProviderError.featureUnsupported) {
            try await enumerator.enumerateChanges(from: SyncAnchor("x"), suggestedPageSize: 10)
        }
    }
}
