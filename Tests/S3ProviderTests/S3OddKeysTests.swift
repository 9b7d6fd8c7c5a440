import FileProviderKit
import Foundation
import TestServers
import Testing

@testable import S3Provider

/// Odd keys as Ceph RGW really lists them, each shown or skipped by its documented rule
/// (docs/SEMANTICS.md, "S3 remotes"), the same in a folder's listing and in the working set.
@Suite struct S3OddKeysTests {
    @Test func oddKeysFollowTheRules() async throws {
        let server = try await S3TestServer.shared()
        let bucket = S3TestServer.bucketName("oddkeys")
        try await server.makeBucket(bucket)
        let provider = try S3Provider(configuration: S3ConformanceTests.configuration(server, bucket: bucket))
        let remote = RemoteObjects(client: provider.client, prefix: "")
        let long = String(repeating: "l", count: 256)
        for key in [
            "plain.txt", "a//b", "both", "both/inside", "dots/../x", "tab\tand\u{1}ctl", "\(long)/x", "marker/",
            "content-marker/", "sp ace+plus%pct",
        ] {
            try await remote.put(key, key == "content-marker/" ? [1, 2, 3] : Array(key.utf8))
        }
        let result = await Result(catching: {
            let root = try await provider.enumerator(for: .rootContainer).enumerateItems(
                startingAt: .initial, suggestedPageSize: 100)
            let walk = try await provider.walk()
            return (root.items, walk)
        })
        await provider.invalidate()
        let (root, walk) = try result.get()
        let shown = Set(
            root.filter { $0.unshowableReason == nil }.map { "\($0.filename)\($0.kind == .directory ? "/" : "")" })
        // `a//b` (an empty part) and `dots/../x` are not shown, but the folders above the part
        // that cannot be a name are; `both` is a folder and its object is hidden; a 256-byte part
        // is handed over for the engine to skip and log.
        #expect(root.filter { $0.unshowableReason != nil }.map(\.identifier.rawValue) == ["\(long)/"])
        #expect(
            shown == [
                "plain.txt", "a/", "both/", "dots/", "tab\tand\u{1}ctl", "marker/", "content-marker/",
                "sp ace+plus%pct",
            ], "\(shown.sorted())")
        let walked = Set(walk.map(\.identifier.rawValue))
        #expect(
            walked == [
                "plain.txt", "a/", "both/", "dots/", "both/inside", "tab\tand\u{1}ctl", "marker/", "content-marker/",
                "sp ace+plus%pct", "a//", "dots/../", "\(long)/",
            ], "\(walked.sorted())")
    }
}
