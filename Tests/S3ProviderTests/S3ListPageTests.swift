import FileProviderKit
import Foundation
import Testing

@testable import S3Provider

/// Listings with odd keys, each by its documented rule (docs/SEMANTICS.md, "S3 remotes"), and
/// answers a provider must refuse.
@Suite struct S3ListPageTests {
    static func listing(contents: [String], prefixes: [String] = [], truncated: String? = nil) -> [UInt8] {
        let objects = contents.map {
            "<Contents><Key>\($0)</Key><LastModified>2026-12-01T20:47:08.123Z</LastModified><ETag>&quot;abc&quot;</ETag><Size>3</Size></Contents>"
        }.joined()
        let common = prefixes.map { "<CommonPrefixes><Prefix>\($0)</Prefix></CommonPrefixes>" }.joined()
        let more = truncated.map {
            "<IsTruncated>true</IsTruncated><NextContinuationToken>\($0)</NextContinuationToken>"
        }
        return Array(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><EncodingType>url</EncodingType>\
            \(more ?? "<IsTruncated>false</IsTruncated>")\(objects)\(common)</ListBucketResult>
            """.utf8)
    }

    func names(_ items: [Item]) -> [String] { items.map { "\($0.filename)\($0.kind == .directory ? "/" : "")" } }

    @Test func folderListingRules() throws {
        let page = try S3ListPage(
            parsing: Self.listing(
                contents: [
                    "p/d/", "p/d/a", "p/d/a%20b.txt", "p/d/ctl%09tab", "p/d/dot.",
                    "p/d/" + String(repeating: "x", count: 256),
                    "p/d/both",
                ],
                prefixes: ["p/d/both/", "p/d/sub/", "p/d//", "p/d/../"]),
            keyPrefix: "p/", folder: S3Path(relative: "d/"))
        let handed = page.items(in: S3Path(relative: "d/"))
        let items = handed.filter { $0.unshowableReason == nil }
        // The marker of the folder itself is not a child; `d//` (an empty name), `..` and a
        // 256-byte name are handed over for the engine to skip and log; `both` is a folder, its
        // object hidden behind it.
        #expect(Set(names(items)) == ["a", "a b.txt", "ctl\ttab", "dot.", "both/", "sub/"])
        #expect(
            Set(handed.filter { $0.unshowableReason != nil }.map(\.identifier.rawValue))
                == ["d//", "d/../", "d/" + String(repeating: "x", count: 256)])
        let file = try #require(items.first { $0.filename == "a" })
        #expect(file.identifier == ItemIdentifier("d/a"))
        #expect(file.parentIdentifier == ItemIdentifier("d/"))
        #expect(file.version == ItemVersion(content: "abc", metadata: "abc"))
        #expect(file.size == 3)
        #expect(file.contentModificationDate == Timestamp(seconds: 1_796_158_028))
    }

    @Test func flatListingMakesTheTree() throws {
        let page = try S3ListPage(
            parsing: Self.listing(contents: ["a", "a/b", "x/y/z.txt", "empty/", "bad//name", "w/../v"]),
            keyPrefix: "", folder: .root)
        let handed = S3Path.tree(of: page.objects)
        let items = handed.filter { $0.unshowableReason == nil }
        // `bad//name` and `w/../v` show the folders above their unshowable parts, and hand those
        // parts over (for the engine to skip and log), nothing below them.
        #expect(names(items) == ["a/", "bad/", "empty/", "w/", "x/", "y/", "b", "z.txt"])
        #expect(
            items.map(\.identifier.rawValue) == ["a/", "bad/", "empty/", "w/", "x/", "x/y/", "a/b", "x/y/z.txt"])
        #expect(handed.filter { $0.unshowableReason != nil }.map(\.identifier.rawValue) == ["bad//", "w/../"])
    }

    @Test func aKeyOutsideTheFolderFailsTheListing() {
        #expect(throws: ProviderError.self) {
            try S3ListPage(parsing: Self.listing(contents: ["q/escaped"]), keyPrefix: "p/", folder: .root)
        }
        #expect(throws: ProviderError.self) {
            try S3ListPage(
                parsing: Self.listing(contents: ["p/other/x"]), keyPrefix: "p/", folder: S3Path(relative: "d/"))
        }
    }

    @Test func badXMLAndTruncationWithoutTokenAreRefused() {
        #expect(throws: (any Error).self) {
            try S3ListPage(parsing: Array("<ListBucketResult><Contents>".utf8), keyPrefix: "", folder: .root)
        }
        #expect(throws: (any Error).self) {
            try S3ListPage(parsing: Self.listing(contents: [], truncated: ""), keyPrefix: "", folder: .root)
        }
        #expect(throws: (any Error).self) {
            try S3XMLElement.parse(Array("<!DOCTYPE x [<!ENTITY a 'b'>]><x>&a;</x>".utf8))
        }
    }

    @Test func continuationTokenIsKept() throws {
        let page = try S3ListPage(
            parsing: Self.listing(contents: ["k"], truncated: "tok&amp;en"), keyPrefix: "", folder: .root)
        #expect(page.nextToken == "tok&en")
    }
}
