import FileProviderKit
import Foundation
import Testing

@testable import WebDAVProvider

@Suite struct FileIDIndexTests {
    @Test func pathsFollowTheirFoldersAndSurviveReopening() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "fpfs-fileids-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let index = try FileIDIndex(directory: directory)
        index.record(ItemIdentifier("1"), parent: .rootContainer, name: "folder")
        index.record(ItemIdentifier("2"), parent: ItemIdentifier("1"), name: "a\tfile\n")
        index.record(ItemIdentifier("1"), parent: .rootContainer, name: "renamed")
        index.record(ItemIdentifier("3"), parent: .rootContainer, name: "gone")
        index.forget(ItemIdentifier("3"))
        try await index.flush()

        let reopened = try FileIDIndex(directory: directory)
        let path = try #require(reopened.path(of: ItemIdentifier("2")))
        #expect(path.components == ["renamed", "a\tfile\n"])
        #expect(reopened.identifier(at: path) == ItemIdentifier("2"))
        #expect(reopened.identifier(at: RemotePath(components: ["folder"])) == nil)
        #expect(reopened.path(of: ItemIdentifier("3")) == nil)
        #expect(reopened.parent(of: ItemIdentifier("2")) == ItemIdentifier("1"))
    }

    @Test func reListingWritesNothingAndALongJournalIsCompactedOnOpening() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "fpfs-fileids-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let journal = directory.appending(path: "fileids.journal")
        let index = try FileIDIndex(directory: directory)
        let size = { (try? FileManager.default.attributesOfItem(atPath: journal.path)[.size] as? Int) ?? 0 }
        for id in 0..<100 { index.record(ItemIdentifier("\(id)"), parent: .rootContainer, name: Filename("f\(id)")) }
        try await index.flush()
        let listed = size()
        for id in 0..<100 { index.record(ItemIdentifier("\(id)"), parent: .rootContainer, name: Filename("f\(id)")) }
        try await index.flush()
        #expect(size() == listed, "listing the same items again wrote to the journal")

        for round in 0..<12 {
            for id in 0..<100 {
                index.record(ItemIdentifier("\(id)"), parent: .rootContainer, name: Filename("r\(round)-\(id)"))
            }
        }
        try await index.flush()
        #expect(size() > 10 * listed)
        let reopened = try FileIDIndex(directory: directory)
        #expect(size() < 2 * listed, "a journal of 1300 lines for 100 entries was not compacted")
        #expect(reopened.path(of: ItemIdentifier("7"))?.components == ["r11-7"])
    }
}
