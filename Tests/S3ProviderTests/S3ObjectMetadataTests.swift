import FileProviderKit
import Foundation
import NIOHTTP1
import Testing

@testable import S3Provider

/// The user-metadata convention (DECISIONS 251): rclone's `mtime`, s3fs's `mode` and `xattr`.
@Suite struct S3ObjectMetadataTests {
    @Test func timesReadAsRcloneWritesThem() {
        let cases: [(String, Timestamp)] = [
            ("1500000000", Timestamp(seconds: 1_500_000_000)),
            ("1500000000.25", Timestamp(seconds: 1_500_000_000, nanoseconds: 250_000_000)),
            ("1500000000.123456789", Timestamp(seconds: 1_500_000_000, nanoseconds: 123_456_789)),
            ("-0.5", Timestamp(seconds: -1, nanoseconds: 500_000_000)),
            ("-2.25", Timestamp(seconds: -3, nanoseconds: 750_000_000)),
            ("0", .epoch),
        ]
        for (text, time) in cases {
            #expect(S3ObjectMetadata.parseTime(text) == time, "\(text)")
            #expect(S3ObjectMetadata.timeValue(time) == text, "\(time)")
        }
        for bad in ["", "x", "1.", ".5", "1.2.3", "1e9", "--1", "1.-5", "١٢"] {
            #expect(S3ObjectMetadata.parseTime(bad) == nil, "\(bad)")
        }
    }

    @Test func modesAndAttributesReadAsS3fsWritesThem() {
        var headers = HTTPHeaders()
        headers.add(name: "x-amz-meta-mode", value: "33216")  // 0o100700
        headers.add(name: "x-amz-meta-xattr", value: "%7B%22user.tag%22%3A%22cmVk%22%7D")  // {"user.tag":"cmVk"}
        let read = S3ObjectMetadata(headers: headers)
        #expect(read.permissions == 0o700)
        #expect(read.attributes == ["user.tag": Array("red".utf8)])
        #expect(read.modified == nil)
        let written = S3ObjectMetadata(permissions: 0o640, attributes: ["user.tag": Array("red".utf8)])
            .headers(isFolder: false)
        #expect(written.contains { $0 == ("x-amz-meta-mode", "33184") })
        #expect(written.contains { $0 == ("x-amz-meta-xattr", "%7B%22user.tag%22%3A%22cmVk%22%7D") })

        var symlink = HTTPHeaders()
        symlink.add(name: "x-amz-meta-mode", value: String(0o120777))
        #expect(S3ObjectMetadata(headers: symlink).permissions == nil, "an s3fs symlink's mode taken for a file's")
        var garbage = HTTPHeaders()
        garbage.add(name: "x-amz-meta-xattr", value: "not json")
        garbage.add(name: "x-amz-meta-mtime", value: "yesterday")
        #expect(S3ObjectMetadata(headers: garbage).isEmpty)
    }

    /// The memo shows in listings what a GET or HEAD found, for that ETag only, across remounts;
    /// an object without metadata leaves no entry.
    @Test func memoAppliesByETagAndPersists() async throws {
        let state = FileManager.default.temporaryDirectory.appending(path: "fpfs-s3-memo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: state) }
        let path = S3Path(relative: "d/a.txt")
        let listed = path.fileItem(size: 3, etag: "\"v1\"", modified: Timestamp(seconds: 1_800_000_000))
        let kept = S3ObjectMetadata(modified: Timestamp(seconds: 1_500_000_000, nanoseconds: 5), permissions: 0o600)
        let memo = S3MetadataMemo(stateDirectory: state)
        let learned = await memo.learn(kept, of: listed)
        #expect(learned.contentModificationDate == kept.modified && learned.permissions == 0o600)
        let plain = S3Path(relative: "plain.txt").fileItem(size: 1, etag: "p", modified: .epoch)
        _ = await memo.learn(S3ObjectMetadata(), of: plain)

        let again = S3MetadataMemo(stateDirectory: state)
        #expect(again.applied(to: listed) == learned, "a remount lost what the last one learned")
        let rewritten = path.fileItem(size: 3, etag: "v2", modified: Timestamp(seconds: 1_800_000_100))
        #expect(again.applied(to: rewritten) == rewritten, "another ETag took the old metadata")
        let lines = try String(contentsOf: state.appending(path: "metadata.jsonl"), encoding: .utf8)
        #expect(lines.split(separator: "\n").count == 1, "\(lines)")
        await again.forget(path)
        #expect(S3MetadataMemo(stateDirectory: state).applied(to: listed) == listed)
    }
}
