import FileProviderKit
import Foundation
import NIOCore
import TestServers
import Testing

@testable import WebDAVProvider

/// What a listing asks the server for.
@Suite struct WebDAVPropfindTests {
    /// Once the root's answer shows the server gives no `oc:fileid`, listings stop asking for it:
    /// Apache then answers without a `404` propstat for it per item. A server that gives fileids
    /// (nextcloud-webdav.py) is still asked, and its items keep them as identifiers.
    @Test(arguments: [WebDAVTestServer.Kind.apache, .nextcloud])
    func listingsAskForFileIDsOnlyOfAServerThatGivesThem(_ kind: WebDAVTestServer.Kind) async throws {
        let (folder, server) = try await Self.serve(kind, filesIn: "many", count: 50)
        defer {
            server.stop()
            folder.remove()
        }
        let provider = try WebDAVProvider(configuration: .init(url: server.url))
        let outcome = await Result {
            let many = try await provider.enumerator(for: .rootContainer)
                .enumerateItems(startingAt: .initial, suggestedPageSize: 100).items.first { $0.filename == "many" }
            let identifier = try #require(many?.identifier)
            var answers: [UInt64] = []
            var items: [Item] = []
            for _ in 0..<2 {
                let before = try await server.accessLog().count
                items = try await provider.enumerator(for: identifier)
                    .enumerateItems(startingAt: .initial, suggestedPageSize: 100).items
                answers += try await server.accessLog().dropFirst(before).filter { $0.method == "PROPFIND" }
                    .map(\.bytesSent)
            }
            // The same folder asked for everything, as before the root's answer was known.
            let before = try await server.accessLog().count
            let response = try await provider.client.send(
                provider.propfindRequest(
                    RemotePath(components: [Filename("many")]), depth: 1, isCollection: true,
                    body: WebDAVProvider.propfindBody))
            await response.discardBody()
            let everything = try #require(try await server.accessLog().dropFirst(before).first?.bytesSent)
            return (answers, everything, items, String(buffer: provider.itemPropfindBody))
        }
        await provider.invalidate()
        let (answers, everything, items, body) = try outcome.get()
        #expect(items.count == 50)
        #expect(answers.count == 2 && answers[0] == answers[1], "the same listing, answered alike: \(answers)")
        #expect((answers[0] < everything) == (kind == .apache), "\(answers[0]) bytes against \(everything)")
        #expect(body.contains("fileid") == (kind == .nextcloud), "\(body)")
        if kind == .nextcloud {
            #expect(items.allSatisfy { Int($0.identifier.rawValue) != nil }, "fileids as identifiers")
        }
    }

    /// A `kind` server over a new folder holding `count` one-byte files in the folder `name`.
    static func serve(_ kind: WebDAVTestServer.Kind, filesIn name: String, count: Int) async throws
        -> (ServedFolder, WebDAVTestServer)
    {
        let folder = try ServedFolder()
        do {
            let files = folder.url.appending(path: name)
            try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
            // Dated a minute back: Apache marks a file's ETag weak (`W/`) for the second after it
            // changes, so a listing within that second would be answered two bytes longer a file.
            let aMinuteAgo = Date(timeIntervalSinceNow: -60)
            for index in 0..<count {
                let file = files.appending(path: "file-\(index)")
                try "x".write(to: file, atomically: false, encoding: .utf8)
                try FileManager.default.setAttributes([.modificationDate: aMinuteAgo], ofItemAtPath: file.path)
            }
            try FileManager.default.setAttributes([.modificationDate: aMinuteAgo], ofItemAtPath: files.path)
            try folder.openToServer()
            return (folder, try await WebDAVTestServer.start(kind, serving: folder.url))
        } catch {
            folder.remove()
            throw error
        }
    }
}
