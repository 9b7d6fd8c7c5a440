import FileProviderKit
import Foundation
import TestServers
import Testing

@testable import WebDAVProvider

/// How many requests a creation costs: a server that refuses `If-None-Match: *` over a taken name
/// (Apache, nextcloud-webdav.py) is asked once, and then a file is a PUT and a PROPFIND for its
/// version, a folder a MKCOL and a PROPFIND, with no PROPFIND first.
@Suite struct WebDAVCreationTests {
    @Test(arguments: [WebDAVTestServer.Kind.apache, .nextcloud])
    func creationsSkipTheCheckOnceTheServerRefusesTakenNames(_ kind: WebDAVTestServer.Kind) async throws {
        let folder = try ServedFolder()
        defer { folder.remove() }
        try folder.openToServer()
        let server = try await WebDAVTestServer.start(kind, serving: folder.url)
        defer { server.stop() }
        let provider = try WebDAVProvider(configuration: .init(url: server.url))
        let outcome = await Result {
            let first = try await create("first.txt", .file, in: provider, contents: "one")
            let requestsBefore = try await server.accessLog().count
            let second = try await create("second.txt", .file, in: provider, contents: "two")
            let made = try await create("made", .directory, in: provider)
            let requests = try await server.accessLog().dropFirst(requestsBefore).map(\.method)
            let collision = await Result { try await create("second.txt", .file, in: provider, contents: "three") }
            return (first, second, made, requests, collision)
        }
        await provider.invalidate()
        let (first, second, made, requests, collision) = try outcome.get()
        #expect(requests == ["PUT", "PROPFIND", "MKCOL", "PROPFIND"])
        #expect([first.filename, second.filename, made.filename] == ["first.txt", "second.txt", "made"])
        guard case .failure(ProviderError.filenameCollision) = collision else {
            Issue.record("creating over a taken name gave \(collision)")
            return
        }
        let bytes = try String(contentsOf: folder.url.appending(path: "second.txt"), encoding: .utf8)
        #expect(bytes == "two")
    }

    /// Creates `name` in the collection's root, with `contents` for a file.
    private func create(_ name: String, _ kind: ItemKind, in provider: WebDAVProvider, contents: String = "")
        async throws -> Item
    {
        let template = Item(
            identifier: ItemIdentifier("local-\(name)"), parentIdentifier: .rootContainer, filename: Filename(name),
            kind: kind, size: UInt64(contents.utf8.count), contentModificationDate: .now,
            version: ItemVersion(content: [], metadata: []))
        guard kind == .file else {
            return try await provider.createItem(basedOn: template, fields: [], contents: nil, options: [])
        }
        let url = FileManager.default.temporaryDirectory.appending(path: "fpfs-creation-\(UUID().uuidString)")
        try await BlockingIO.run { try Data(contents.utf8).write(to: url) }
        defer { try? FileManager.default.removeItem(at: url) }
        return try await provider.createItem(basedOn: template, fields: [.contents], contents: url, options: [])
    }
}
