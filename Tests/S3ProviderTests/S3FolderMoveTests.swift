import FileProviderKit
import Foundation
import TestServers
import Testing

@testable import S3Provider

/// A folder rename copies every key and then deletes the old ones; one a kill -9 cut off half-way
/// is finished at the next mount, and the engine's replay of it (`mayAlreadyExist`) succeeds,
/// nothing lost or left twice.
@Suite struct S3FolderMoveTests {
    static let keys = ["src/", "src/a.txt", "src/sub/b.txt", "src/sub/c.txt"]

    /// A bucket where the rename of `src/` to `dst/` was cut off: the move noted in the state
    /// folder, `a.txt` copied and deleted, `sub/b.txt` copied only, `sub/c.txt` not yet.
    static func interruptedMove() async throws -> (S3Provider.Configuration, URL) {
        let server = try await S3TestServer.shared()
        let bucket = S3TestServer.bucketName("foldermove")
        try await server.makeBucket(bucket)
        let state = FileManager.default.temporaryDirectory.appending(path: "fpfs-s3-state-\(UUID().uuidString)")
        var configuration = S3ConformanceTests.configuration(server, bucket: bucket)
        configuration.stateDirectory = state
        let writer = try S3Provider(configuration: configuration)
        let remote = RemoteObjects(client: writer.client, prefix: "")
        for key in keys { try await remote.put(key, Array(key.utf8)) }
        try await remote.put("dst/a.txt", Array("src/a.txt".utf8))
        try await remote.delete("src/a.txt")
        try await remote.put("dst/sub/b.txt", Array("src/sub/b.txt".utf8))
        await writer.invalidate()
        try FileManager.default.createDirectory(
            at: state.appending(path: "folder-moves"), withIntermediateDirectories: true)
        try JSONEncoder().encode(["src/", "dst/"]).write(to: state.appending(path: "folder-moves/cut"))
        return (configuration, state)
    }

    static func everyKey(_ provider: S3Provider) async throws -> [String: [UInt8]] {
        var all: [String: [UInt8]] = [:]
        let remote = RemoteObjects(client: provider.client, prefix: "")
        for key in try await provider.keys(under: .root) { all[key] = try await remote.get(key) }
        return all
    }

    static let moved: [String: [UInt8]] = [
        "dst/": Array("src/".utf8), "dst/a.txt": Array("src/a.txt".utf8),
        "dst/sub/b.txt": Array("src/sub/b.txt".utf8), "dst/sub/c.txt": Array("src/sub/c.txt".utf8),
    ]

    @Test func nextMountFinishesTheMove() async throws {
        let (configuration, state) = try await Self.interruptedMove()
        defer { try? FileManager.default.removeItem(at: state) }
        let next = try S3Provider(configuration: configuration)
        let outcome = await Result(catching: {
            _ = try await next.item(for: .rootContainer)
            return try await Self.everyKey(next)
        })
        await next.invalidate()
        #expect(try outcome.get() == Self.moved)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: state.path + "/folder-moves")) == [])
    }

    @Test func replayOfTheMoveFinishesIt() async throws {
        let (configuration, state) = try await Self.interruptedMove()
        defer { try? FileManager.default.removeItem(at: state) }
        try FileManager.default.removeItem(at: state.appending(path: "folder-moves"))
        let next = try S3Provider(configuration: configuration)
        let outcome = await Result(catching: {
            var folder = try await next.item(for: ItemIdentifier("src/"))
            folder.filename = "dst"
            _ = try await next.modifyItem(
                folder, baseVersion: folder.version, changedFields: [.filename], contents: nil,
                options: .mayAlreadyExist)
            return try await Self.everyKey(next)
        })
        await next.invalidate()
        #expect(try outcome.get() == Self.moved)
    }
}
