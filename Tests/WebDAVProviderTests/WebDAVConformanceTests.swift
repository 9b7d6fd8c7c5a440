import FileProviderKit
import Foundation
import ProviderTesting
import TestServers
import Testing

@testable import WebDAVProvider

/// WebDAVProvider must pass the suite every provider runs, against real servers: Apache mod_dav,
/// `rclone serve webdav` and nextcloud-webdav.py (with fileids and sync-collection), each serving the fixture from a folder the suite also changes
/// directly, as another client of the server would.
@Suite struct WebDAVConformanceTests {
    @Test(arguments: WebDAVTestServer.Kind.allCases)
    func wholeSuite(_ kind: WebDAVTestServer.Kind) async throws {
        let folder = try ServedFolder()
        defer { folder.remove() }
        try await ConformanceFixture.withoutSymlinks.materialize(in: folder.url)
        try folder.openToServer()
        let server = try await WebDAVTestServer.start(kind, serving: folder.url)
        defer { server.stop() }
        let provider = try WebDAVProvider(configuration: .init(url: server.url))
        var suite = ProviderConformance(provider: provider, fixture: .withoutSymlinks) { [url = folder.url] mutation in
            try await mutation.apply(inDirectory: url)
            try ServedFolder.openToServer(url)
        }
        suite.pageSizes = [1, 7, 500]
        let report = await suite.run()
        if kind == .nextcloud {
            // The suite ran on fileids and on the server's change reports, not on paths and walks.
            let root = try await provider.enumerator(for: .rootContainer).enumerateItems(
                startingAt: .initial, suggestedPageSize: 500)
            #expect(
                !root.items.isEmpty && root.items.allSatisfy { Int($0.identifier.rawValue) != nil }, "\(root.items)")
            let reports = try await server.accessLog().filter { $0.method == "REPORT" && $0.status == 207 }
            #expect(!reports.isEmpty, "no sync-collection REPORT reached the server")
        }
        await provider.invalidate()
        #expect(report.passed, "\(report)")
        #expect(report.skipped.isEmpty, "\(report)")
    }

    @Test(arguments: [WebDAVTestServer.AuthScheme.basic, .digest])
    func wrongPasswordIsNotAuthenticatedAndRightOneLists(_ scheme: WebDAVTestServer.AuthScheme) async throws {
        let folder = try ServedFolder()
        defer { folder.remove() }
        try folder.openToServer()
        let server = try await WebDAVTestServer.start(
            .apache, serving: folder.url, credentials: .init(user: "alice", password: "s3cret pass", scheme: scheme))
        defer { server.stop() }
        let wrong = try WebDAVProvider(
            configuration: .init(url: server.url, credentials: .init(user: "alice", password: "wrong")))
        let refusal = await Result(catching: { try await wrong.checkReachable() })
        await wrong.invalidate()
        guard case .failure(ProviderError.notAuthenticated(let reason)) = refusal else {
            Issue.record("a wrong password gave \(refusal), not notAuthenticated")
            return
        }
        #expect(!reason.contains("wrong"), "the reason shows the password: \(reason)")

        let right = try WebDAVProvider(
            configuration: .init(url: server.url, credentials: .init(user: "alice", password: "s3cret pass")))
        let listing = await Result(catching: {
            try await right.checkReachable()
            return try await right.enumerator(for: .rootContainer).enumerateItems(
                startingAt: .initial, suggestedPageSize: 10)
        })
        await right.invalidate()
        #expect(try listing.get().items.isEmpty)
    }
}

extension Result where Failure == any Error {
    /// The outcome of an async throwing call, so a test can clean up before it judges.
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

/// A temporary folder for a server to serve, opened to Apache's user (`www-data`).
struct ServedFolder {
    let url = FileManager.default.temporaryDirectory.appending(path: "fpfs-served-\(UUID().uuidString)")

    init() throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func openToServer() throws { try Self.openToServer(url) }

    /// Makes everything in the folder readable and writable by the server's user.
    static func openToServer(_ url: URL) throws { try WebDAVTestServer.open(url) }

    func remove() { try? FileManager.default.removeItem(at: url) }
}
