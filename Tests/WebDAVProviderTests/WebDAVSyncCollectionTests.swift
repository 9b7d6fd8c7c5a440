import FileProviderKit
import Foundation
import ProviderTesting
import TestServers
import Testing

@testable import WebDAVProvider

/// A server that offers `oc:fileid` and `sync-collection` (nextcloud-webdav.py): identifiers are
/// the server's fileids and survive renames, restarts and moves; changes come from the REPORT.
@Suite struct WebDAVSyncCollectionTests {
    @Test func serverRenameIsAnUpdateOfTheSameIdentifierFromOneReport() async throws {
        let mount = try await NextcloudMount.start(files: ["a/file.txt": "moves", "b/stays.txt": "stays"])
        defer { mount.stop() }
        let a = try await mount.child("a"), b = try await mount.child("b")
        let file = try await mount.child("file.txt", in: a.identifier)
        #expect(Int(file.identifier.rawValue) != nil, "\(file.identifier) is not the server's fileid")
        let workingSet = try await mount.provider.enumerator(for: .workingSet)
        let anchor = try #require(try await workingSet.currentSyncAnchor())
        #expect(String(decoding: anchor.bytes, as: UTF8.self).hasPrefix("sync-token:"))

        try FileManager.default.moveItem(at: mount.url("a/file.txt"), to: mount.url("b/renamed.txt"))
        let requestsBefore = try await mount.server.accessLog().count
        let changes = try await mount.changes(from: anchor)
        let requests = try await mount.server.accessLog().dropFirst(requestsBefore)
        #expect(requests.map(\.method) == ["REPORT"], "enumerateChanges sent \(requests.map(\.method))")
        let moved = try #require(changes.updated.first { $0.identifier == file.identifier }, "\(changes)")
        #expect(moved.filename == "renamed.txt" && moved.parentIdentifier == b.identifier)
        #expect(!changes.deleted.contains(file.identifier), "the rename was reported as a deletion: \(changes)")
        #expect(try await mount.provider.item(for: file.identifier).filename == "renamed.txt")

        // A folder renamed: the same identifier, and what is inside is found at its new place.
        try FileManager.default.moveItem(at: mount.url("b"), to: mount.url("b2"))
        let folderChanges = try await mount.changes(from: changes.anchor)
        #expect(folderChanges.updated.contains { $0.identifier == b.identifier && $0.filename == "b2" })
        #expect(!folderChanges.deleted.contains(b.identifier) && !folderChanges.deleted.contains(file.identifier))
        #expect(try await mount.fetch(file.identifier) == "moves")
    }

    @Test func forgottenTokenIsSyncAnchorExpiredAndReEnumerationIsRight() async throws {
        let mount = try await NextcloudMount.start(files: ["one.txt": "1", "folder/two.txt": "2"])
        defer { mount.stop() }
        let workingSet = try await mount.provider.enumerator(for: .workingSet)
        let anchor = try #require(try await workingSet.currentSyncAnchor())
        try "3".write(to: mount.url("folder/three.txt"), atomically: false, encoding: .utf8)
        try FileManager.default.removeItem(at: mount.url("one.txt"))
        mount.server.forgetSyncTokens()
        await #expect(throws: ProviderError.syncAnchorExpired) {
            _ = try await workingSet.enumerateChanges(from: anchor, suggestedPageSize: 100)
        }

        // Start over as the engine does: list the working set, take a new anchor.
        var items: [Item] = []
        var page = EnumerationPage.initial
        while true {
            let listed = try await workingSet.enumerateItems(startingAt: page, suggestedPageSize: 1)
            items += listed.items
            guard let next = listed.nextPage else { break }
            page = next
        }
        #expect(Set(items.map(\.filename.description)) == ["folder", "two.txt", "three.txt"])
        let folder = try #require(items.first { $0.filename == "folder" })
        #expect(items.filter { $0.filename != "folder" }.allSatisfy { $0.parentIdentifier == folder.identifier })
        let fresh = try #require(try await workingSet.currentSyncAnchor())
        try "changed".write(to: mount.url("folder/two.txt"), atomically: false, encoding: .utf8)
        let changes = try await mount.changes(from: fresh)
        #expect(changes.updated.map(\.filename) == ["two.txt"] && changes.deleted.isEmpty, "\(changes)")
    }

    @Test func aServerThatRefusesTheReportItListsIsWalkedAfterOneExpiredAnchor() async throws {
        let mount = try await NextcloudMount.start(files: ["before.txt": "b"])
        defer { mount.stop() }
        let workingSet = try await mount.provider.enumerator(for: .workingSet)
        let anchor = try #require(try await workingSet.currentSyncAnchor())
        mount.server.refuseReports()
        await #expect(throws: ProviderError.syncAnchorExpired) {
            _ = try await workingSet.enumerateChanges(from: anchor, suggestedPageSize: 100)
        }
        let walked = try #require(try await workingSet.currentSyncAnchor())
        #expect(!String(decoding: walked.bytes, as: UTF8.self).hasPrefix("sync-token"))
        try "a".write(to: mount.url("after.txt"), atomically: false, encoding: .utf8)
        let changes = try await mount.changes(from: walked)
        #expect(changes.updated.map(\.filename) == ["after.txt"], "\(changes)")
        #expect(try await mount.server.accessLog().filter { $0.method == "REPORT" }.count == 1)
    }

    @Test func truncatedAnswersComeInBatchesAndLongTokensLiveInTheStateFolder() async throws {
        let mount = try await NextcloudMount.start(files: [:])
        defer { mount.stop() }
        mount.server.useLongSyncTokens()
        let workingSet = try await mount.provider.enumerator(for: .workingSet)
        let anchor = try #require(try await workingSet.currentSyncAnchor())
        #expect(String(decoding: anchor.bytes, as: UTF8.self).hasPrefix("sync-token-file:"))
        for index in 0..<5 { try "\(index)".write(to: mount.url("f\(index)"), atomically: false, encoding: .utf8) }
        var names: [String] = []
        var batches = 0
        var next = anchor
        repeat {
            let batch = try await workingSet.enumerateChanges(from: next, suggestedPageSize: 2)
            names += batch.updated.map(\.filename.description)
            next = batch.nextAnchor
            batches += 1
            if !batch.moreComing { break }
        } while batches < 10
        #expect(Set(names) == ["f0", "f1", "f2", "f3", "f4"] && batches == 3, "\(batches) batches: \(names)")
    }

    @Test func identifiersAndAnchorsSurviveANewProviderOnTheSameStateFolder() async throws {
        let mount = try await NextcloudMount.start(files: ["deep/er/file.txt": "kept"])
        defer { mount.stop() }
        let deep = try await mount.child("deep")
        let deeper = try await mount.child("er", in: deep.identifier)
        let file = try await mount.child("file.txt", in: deeper.identifier)
        let anchor = try #require(try await mount.provider.enumerator(for: .workingSet).currentSyncAnchor())
        await mount.provider.invalidate()

        let restarted = try mount.newProvider()
        #expect(try await restarted.item(for: file.identifier).parentIdentifier == deeper.identifier)
        #expect(try await NextcloudMount.fetch(file.identifier, from: restarted) == "kept")
        try FileManager.default.moveItem(at: mount.url("deep/er/file.txt"), to: mount.url("deep/moved.txt"))
        let batch = try await restarted.enumerator(for: .workingSet).enumerateChanges(
            from: anchor, suggestedPageSize: 100)
        #expect(batch.updated.contains { $0.identifier == file.identifier && $0.parentIdentifier == deep.identifier })

        // An identifier whose place now holds nothing, and one never seen: noSuchItem.
        try FileManager.default.moveItem(at: mount.url("deep/er"), to: mount.url("er-elsewhere"))
        await #expect(throws: ProviderError.noSuchItem(deeper.identifier)) {
            _ = try await restarted.item(for: deeper.identifier)
        }
        await #expect(throws: ProviderError.noSuchItem(ItemIdentifier("987654"))) {
            _ = try await restarted.item(for: ItemIdentifier("987654"))
        }
        await restarted.invalidate()
    }
}

/// A nextcloud-webdav.py server over a temporary folder, and a provider with a state folder.
struct NextcloudMount {
    let folder: ServedFolder
    let state: URL
    let server: WebDAVTestServer
    let provider: WebDAVProvider

    /// Changes reported from an anchor on, batch after batch, and the anchor after the last.
    struct Changes: CustomStringConvertible {
        var updated: [Item] = []
        var deleted: [ItemIdentifier] = []
        var anchor: SyncAnchor
        var description: String { "updated \(updated.map(\.filename)), deleted \(deleted)" }
    }

    static func start(files: [String: String]) async throws -> NextcloudMount {
        let folder = try ServedFolder()
        for (path, contents) in files {
            let url = folder.url.appending(path: path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try contents.write(to: url, atomically: false, encoding: .utf8)
        }
        let server = try await WebDAVTestServer.start(.nextcloud, serving: folder.url)
        let state = folder.url.deletingLastPathComponent().appending(path: "fpfs-state-\(UUID().uuidString)")
        let provider = try WebDAVProvider(configuration: .init(url: server.url, stateDirectory: state))
        return NextcloudMount(folder: folder, state: state, server: server, provider: provider)
    }

    func newProvider() throws -> WebDAVProvider {
        try WebDAVProvider(configuration: .init(url: server.url, stateDirectory: state))
    }

    func stop() {
        server.stop()
        folder.remove()
        try? FileManager.default.removeItem(at: state)
    }

    func url(_ path: String) -> URL { folder.url.appending(path: path) }

    /// The item called `name` in a folder, from a listing of it.
    func child(_ name: Filename, in folder: ItemIdentifier = .rootContainer) async throws -> Item {
        let listing = try await provider.enumerator(for: folder).enumerateItems(
            startingAt: .initial, suggestedPageSize: 100)
        return try #require(listing.items.first { $0.filename == name }, "no \(name) in \(listing.items)")
    }

    func changes(from anchor: SyncAnchor) async throws -> Changes {
        let workingSet = try await provider.enumerator(for: .workingSet)
        var changes = Changes(anchor: anchor)
        while true {
            let batch = try await workingSet.enumerateChanges(from: changes.anchor, suggestedPageSize: 100)
            changes.updated += batch.updated
            changes.deleted += batch.deleted
            changes.anchor = batch.nextAnchor
            if !batch.moreComing { return changes }
        }
    }

    func fetch(_ identifier: ItemIdentifier) async throws -> String {
        try await Self.fetch(identifier, from: provider)
    }

    static func fetch(_ identifier: ItemIdentifier, from provider: WebDAVProvider) async throws -> String {
        let sink = MemorySink()
        _ = try await provider.fetchContents(for: identifier, version: nil, into: sink)
        return String(decoding: sink.contents, as: UTF8.self)
    }
}
