import FileProviderKit
import Foundation
import ProviderTesting
import TestServers
import Testing

@testable import S3Provider

/// S3Provider must pass the suite every provider runs, against a real distributed object store:
/// Ceph's RADOS Gateway on a one-node cluster (TestServers.S3TestServer), one bucket per test. The
/// fixture and the suite's changes behind the provider's back go in through the provider's own
/// signed client, as another S3 client would send them.
@Suite struct S3ConformanceTests {
    @Test(arguments: ["", "mounted/prefix"])
    func wholeSuite(prefix: String) async throws {
        let server = try await S3TestServer.shared()
        let bucket = S3TestServer.bucketName("conformance")
        try await server.makeBucket(bucket)
        let provider = try S3Provider(configuration: Self.configuration(server, bucket: bucket, prefix: prefix))
        let remote = RemoteObjects(client: provider.client, prefix: provider.keyPrefix)
        // A key outside the prefix must not show.
        if !prefix.isEmpty { try await remote.put("elsewhere.txt", [1], outsidePrefix: true) }
        for entry in ConformanceFixture.withoutSymlinks.entries {
            switch entry.node {
            case .file(let contents): try await remote.put(entry.path, contents)
            case .directory: try await remote.put(entry.path + "/", [])
            case .symlink: Issue.record("the fixture has no symlinks")
            }
        }
        var suite = ProviderConformance(provider: provider, fixture: .withoutSymlinks) { mutation in
            try await remote.apply(mutation)
        }
        suite.pageSizes = [1, 7, 500]
        let report = await suite.run()
        await provider.invalidate()
        #expect(report.passed, "\(report)")
        #expect(report.skipped.isEmpty, "\(report)")
    }

    @Test func wrongSecretIsNotAuthenticated() async throws {
        let server = try await S3TestServer.shared()
        let bucket = S3TestServer.bucketName("wrongsecret")
        try await server.makeBucket(bucket)
        var configuration = Self.configuration(server, bucket: bucket)
        configuration.credentials?.secretKey = "not-the-secret-key"
        let wrong = try S3Provider(configuration: configuration)
        let refusal = await Result(catching: { try await wrong.checkReachable() })
        await wrong.invalidate()
        guard case .failure(ProviderError.notAuthenticated(let reason)) = refusal else {
            Issue.record("a wrong secret gave \(refusal), not notAuthenticated")
            return
        }
        #expect(reason.contains("access denied by the server: check the access key"), "\(reason)")
        #expect(reason.contains("SignatureDoesNotMatch"), "\(reason)")
        #expect(!reason.contains("not-the-secret-key") && !reason.contains(server.secretKey), "\(reason)")

        let right = try S3Provider(configuration: Self.configuration(server, bucket: bucket))
        let listing = await Result(catching: { try await right.checkReachable() })
        await right.invalidate()
        #expect(throws: Never.self) { try listing.get() }
    }

    @Test func missingBucketIsNamed() async throws {
        let server = try await S3TestServer.shared()
        let provider = try S3Provider(configuration: Self.configuration(server, bucket: "no-such-bucket-fpfs"))
        let refusal = await Result(catching: { try await provider.checkReachable() })
        await provider.invalidate()
        guard case .failure(ProviderError.cannotSynchronize(let reason)) = refusal else {
            Issue.record("a missing bucket gave \(refusal)")
            return
        }
        #expect(reason.contains("does not exist"), "\(reason)")
    }

    static func configuration(_ server: S3TestServer, bucket: String, prefix: String = "") -> S3Provider.Configuration {
        S3Provider.Configuration(
            endpoint: server.endpoint, bucket: bucket, prefix: prefix, region: server.region,
            credentials: S3Credentials(accessKey: server.accessKey, secretKey: server.secretKey))
    }
}

/// Objects written straight to the bucket, as another client would.
struct RemoteObjects: Sendable {
    let client: S3Client
    let prefix: String

    func put(_ path: String, _ contents: [UInt8], outsidePrefix: Bool = false) async throws {
        let answer = try await client.sendCollecting(
            .init(method: .PUT, key: (outsidePrefix ? "" : prefix) + path, body: .bytes(contents)))
        guard answer.status.code == 200 else { throw TestFailure("PUT \(path): \(answer.status)") }
    }

    func delete(_ path: String) async throws {
        let answer = try await client.sendCollecting(.init(method: .DELETE, key: prefix + path))
        guard [200, 204].contains(answer.status.code) else { throw TestFailure("DELETE \(path): \(answer.status)") }
    }

    func get(_ path: String) async throws -> [UInt8] {
        let answer = try await client.sendCollecting(.init(method: .GET, key: prefix + path))
        guard answer.status.code == 200 else { throw TestFailure("GET \(path): \(answer.status)") }
        return answer.body
    }

    func apply(_ mutation: ConformanceMutation) async throws {
        switch mutation {
        case .createFile(let path, let contents), .modifyFile(let path, let contents):
            try await put(path, contents)
        case .renameFile(let from, let to):
            try await put(to, try await get(from))
            try await delete(from)
        case .deleteFile(let path):
            try await delete(path)
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension Result where Failure == any Error {
    /// The outcome of an async throwing call, so a test can clean up before it judges.
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
