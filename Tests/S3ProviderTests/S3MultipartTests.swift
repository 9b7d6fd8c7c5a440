import FileProviderKit
import Foundation
import ProviderTesting
import TestServers
import Testing

@testable import S3Provider

/// Files above the multipart threshold go up in parts on Ceph RGW, read back equal, and leave no
/// incomplete upload; one a kill -9 cut off is aborted at the next mount.
@Suite struct S3MultipartTests {
    /// The uploads under way in the bucket (`ListMultipartUploads`).
    static func uploads(_ client: S3Client) async throws -> [String] {
        let answer = try await client.sendCollecting(.init(method: .GET, key: nil, query: [("uploads", "")]))
        guard answer.status.code == 200 else { throw TestFailure("ListMultipartUploads: \(answer.status)") }
        return try S3XMLElement.parse(answer.body).children("Upload").compactMap { $0.text(of: "UploadId") }
    }

    @Test func largeFileGoesUpInPartsAndReadsBackEqual() async throws {
        let server = try await S3TestServer.shared()
        let bucket = S3TestServer.bucketName("multipart")
        try await server.makeBucket(bucket)
        let state = FileManager.default.temporaryDirectory.appending(path: "fpfs-s3-state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: state) }
        var configuration = S3ConformanceTests.configuration(server, bucket: bucket)
        configuration.stateDirectory = state
        configuration.multipartThreshold = 6 << 20
        configuration.partSize = 5 << 20
        // Three parts, two at a time: the window refills as parts finish, in any order.
        configuration.partsInFlight = 2
        let provider = try S3Provider(configuration: configuration)
        let contents = ConformanceFixture.pattern(count: (12 << 20) + 4321, seed: 7)
        let file = state.appending(path: "upload.bin")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        try Data(contents).write(to: file)
        let template = Item(
            identifier: ItemIdentifier("local"), parentIdentifier: .rootContainer, filename: "big.bin", kind: .file,
            version: ItemVersion(content: [], metadata: []))
        let created = await Result(catching: {
            try await provider.createItem(basedOn: template, fields: [.contents], contents: file, options: [])
        })
        let read = await Result(catching: {
            try await RemoteObjects(client: provider.client, prefix: "").get("big.bin")
        })
        // A second upload over the same name is a collision, checked before any part goes up.
        let again = await Result(catching: {
            try await provider.createItem(basedOn: template, fields: [.contents], contents: file, options: [])
        })
        let left = await Result(catching: { try await Self.uploads(provider.client) })
        await provider.invalidate()
        #expect(try created.get().size == UInt64(contents.count))
        #expect(try read.get() == contents, "the object differs from the file sent")
        guard case .failure(ProviderError.filenameCollision) = again else {
            Issue.record("a second creation gave \(again)")
            return
        }
        #expect(try left.get().isEmpty, "incomplete uploads left: \(left)")
    }

    @Test func uploadCutOffByKillIsAbortedAtTheNextMount() async throws {
        let server = try await S3TestServer.shared()
        let bucket = S3TestServer.bucketName("abandoned")
        try await server.makeBucket(bucket)
        let state = FileManager.default.temporaryDirectory.appending(path: "fpfs-s3-state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: state) }
        var configuration = S3ConformanceTests.configuration(server, bucket: bucket)
        configuration.stateDirectory = state
        // What a daemon killed in the middle of an upload leaves: the upload begun and noted.
        let killed = try S3Provider(configuration: configuration)
        let started = try await killed.client.sendCollecting(
            .init(method: .POST, key: "cut.bin", query: [("uploads", "")], isIdempotent: false))
        let uploadID = try #require(try S3XMLElement.parse(started.body).text(of: "UploadId"))
        try FileManager.default.createDirectory(
            at: state.appending(path: "multipart"), withIntermediateDirectories: true)
        try Data("cut.bin".utf8).write(to: state.appending(path: "multipart/\(uploadID)"))
        // Another machine's upload under way, not noted here, must survive.
        let foreign = try await killed.client.sendCollecting(
            .init(method: .POST, key: "theirs.bin", query: [("uploads", "")], isIdempotent: false))
        let foreignID = try #require(try S3XMLElement.parse(foreign.body).text(of: "UploadId"))
        #expect(Set(try await Self.uploads(killed.client)) == [uploadID, foreignID])
        await killed.invalidate()

        let next = try S3Provider(configuration: configuration)
        let mounted = await Result(catching: { try await next.item(for: .rootContainer) })
        let left = await Result(catching: { try await Self.uploads(next.client) })
        await next.invalidate()
        #expect(throws: Never.self) { try mounted.get() }
        #expect(try left.get() == [foreignID])
        #expect(
            (try? FileManager.default.contentsOfDirectory(atPath: state.appending(path: "multipart").path)) == [])
    }

    /// Above the multipart-copy threshold (5 GiB; lowered here) a rename copies part by part,
    /// each part naming the source's ETag, keeps the time and mode, and leaves nothing behind.
    @Test func largeObjectIsRenamedPartByPart() async throws {
        let server = try await S3TestServer.shared()
        let bucket = S3TestServer.bucketName("partcopy")
        try await server.makeBucket(bucket)
        let contents = ConformanceFixture.pattern(count: (12 << 20) + 99, seed: 11)
        try await server.put(
            Data(contents), bucket: bucket, key: "big.bin",
            headers: ["x-amz-meta-mtime": "1500000000.5", "x-amz-meta-mode": "33216"])
        var configuration = S3ConformanceTests.configuration(server, bucket: bucket)
        configuration.multipartCopyThreshold = 6 << 20
        configuration.partSize = 5 << 20
        let provider = try S3Provider(configuration: configuration)
        let outcome = await Result(catching: { () -> (Item, Item) in
            var item = try await provider.item(for: ItemIdentifier("big.bin"))
            let base = item.version
            item.filename = "moved.bin"
            let moved = try await provider.modifyItem(
                item, baseVersion: base, changedFields: [.filename], contents: nil, options: [])
            // A stale base is a conflict, found before any part is copied.
            var again = moved
            again.filename = "twice.bin"
            let stale = await Result(catching: {
                try await provider.modifyItem(
                    again, baseVersion: ItemVersion(content: "stale", metadata: "stale"), changedFields: [.filename],
                    contents: nil, options: [])
            })
            guard case .failure(ProviderError.conflict) = stale else { throw TestFailure("a stale base gave \(stale)") }
            return (item, moved)
        })
        let left = await Result(catching: { try await Self.uploads(provider.client) })
        await provider.invalidate()
        let (_, moved) = try outcome.get()
        #expect(moved.size == UInt64(contents.count))
        #expect(moved.contentModificationDate == Timestamp(seconds: 1_500_000_000, nanoseconds: 500_000_000))
        #expect(moved.permissions == 0o700)
        #expect(String(decoding: moved.version.content, as: UTF8.self).hasSuffix("-3"), "\(moved.version)")
        #expect(try await server.get(bucket: bucket, key: "moved.bin") == Data(contents))
        #expect(try await server.get(bucket: bucket, key: "big.bin") == nil)
        #expect(try await server.get(bucket: bucket, key: "twice.bin") == nil)
        #expect(try left.get().isEmpty, "incomplete uploads left: \(left)")
    }

    /// A rename copied part by part whose answer a kill -9 lost is sent again with
    /// `mayAlreadyExist`: the copy there has an ETag of its own, and is known by the source's ETag
    /// it names (DECISIONS 316), whether the source was deleted or not yet.
    @Test(arguments: [false, true])
    func replayedPartByPartRenameFindsItsCopy(sourceLeft: Bool) async throws {
        let server = try await S3TestServer.shared()
        let bucket = S3TestServer.bucketName("partreplay")
        try await server.makeBucket(bucket)
        let contents = Data(ConformanceFixture.pattern(count: (12 << 20) + 7, seed: 13))
        try await server.put(contents, bucket: bucket, key: "big.bin")
        var configuration = S3ConformanceTests.configuration(server, bucket: bucket)
        configuration.multipartCopyThreshold = 6 << 20
        configuration.partSize = 5 << 20
        let provider = try S3Provider(configuration: configuration)
        let outcome = await Result(catching: { () -> (ItemVersion, Item, Item) in
            var item = try await provider.item(for: ItemIdentifier("big.bin"))
            let base = item.version
            item.filename = "moved.bin"
            let first = try await provider.modifyItem(
                item, baseVersion: base, changedFields: [.filename], contents: nil, options: [])
            // The copy made, the source not yet deleted: a PUT of the same bytes has the same ETag.
            if sourceLeft { try await server.put(contents, bucket: bucket, key: "big.bin") }
            let replayed = try await provider.modifyItem(
                item, baseVersion: base, changedFields: [.filename], contents: nil, options: [.mayAlreadyExist])
            return (base, first, replayed)
        })
        await provider.invalidate()
        let (base, first, replayed) = try outcome.get()
        #expect(first.version.content != base.content, "the copy kept the source's ETag: nothing was tested")
        #expect(replayed.identifier == ItemIdentifier("moved.bin"))
        #expect(replayed.version.content == first.version.content, "the rename was made again")
        #expect(try await server.keys(bucket: bucket) == ["moved.bin"])
        #expect(try await server.get(bucket: bucket, key: "moved.bin") == contents)
    }
}
