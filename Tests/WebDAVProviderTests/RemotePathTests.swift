import FileProviderKit
import Foundation
import Testing

@testable import WebDAVProvider

@Suite struct RemotePathTests {
    @Test func identifiersRoundTripAndAreCanonical() throws {
        let path = try #require(RemotePath.decode("docs/r%C3%A9sum%c3%a9 (1).txt"))
        #expect(path.identifier.rawValue == "/docs/r%C3%A9sum%C3%A9%20%281%29.txt")
        #expect(RemotePath(identifier: path.identifier) == path)
        #expect(RemotePath(identifier: .rootContainer) == .root)
        #expect(path.parent.identifier.rawValue == "/docs")
        #expect(path.parent.parent.identifier == .rootContainer)
        #expect(RemotePath(identifier: ItemIdentifier("fpfs-local-1")) == nil)
    }

    @Test(arguments: ["a/../b", "a/./b", "a//b", "a/%2F", "a/%00", "%zz", "a/%4"])
    func badComponentsAreRefused(_ encoded: String) {
        #expect(RemotePath.decode(Substring(encoded)) == nil)
    }

    @Test func hrefsResolveOnlyBelowTheMountedCollection() async throws {
        let client = try WebDAVClient(
            configuration: .init(url: URL(string: "http://127.0.0.1:8080/my%20dav/")!))
        #expect(client.path(ofHref: "/my%20dav/") == .root)
        #expect(client.path(ofHref: "/my dav/a%20b/")?.description == "/a b")
        #expect(client.path(ofHref: "http://127.0.0.1:8080/my%20dav/x")?.description == "/x")
        #expect(client.path(ofHref: "http://elsewhere:8080/my%20dav/x") == nil)
        #expect(client.path(ofHref: "/other/x") == nil)
        #expect(client.path(ofHref: "/my%20dav/../etc/passwd") == nil)
        #expect(client.path(ofHref: "/my%20dav/a%2Fb") == nil)
        #expect(client.path(ofHref: "/my%20dav/a/./b") == nil)
        #expect(client.path(ofHref: "/my%20dav/a//b") == nil)
        #expect(client.path(ofHref: "/my%20dav/a/b?x=1#y")?.components.count == 2)
        #expect(client.path(ofHref: "/my%20dav/x:y")?.description == "/x:y", "a path with a colon is not a URL")
        // Names are bytes: percent-encoded UTF-8 and raw UTF-8 name the same item.
        #expect(client.path(ofHref: "/my%20dav/caf%C3%A9") == client.path(ofHref: "/my dav/café"))
        #expect(client.path(ofHref: "/my%20dav/caf%C3%A9")?.description == "/café")
        #expect(
            client.url(of: RemotePath.decode("a b/c")!, isCollection: true) == "http://127.0.0.1:8080/my%20dav/a%20b/c/"
        )
        await client.shutdown()
    }

    /// A listing's hrefs read one after the other give the paths the client gives each alone,
    /// whatever the href before them was.
    @Test func aListingsHrefsGiveTheClientsPaths() async throws {
        let client = try WebDAVClient(
            configuration: .init(url: URL(string: "http://127.0.0.1:8080/my%20dav/")!))
        let hrefs = [
            "/my%20dav/", "/my%20dav/a/", "/my%20dav/a/x", "/my%20dav/a/y%20z", "/my dav/a/caf\u{E9}",
            "/my%20dav/a/caf%C3%A9/", "/my%20dav/a/..", "/my%20dav/a/.", "/my%20dav/a//", "/my%20dav/a/%2F",
            "/my%20dav/a/%zz", "/my%20dav/b/x", "/my%20dav", "/my%20dav/a/b?x=1", "http://127.0.0.1:8080/my%20dav/a/x",
            "http://elsewhere/my%20dav/a/x", "/other/a", "/other/b", "/", "//", "/my%20dav/a//b", "/my%20dav/a/x/",
            "x", "",
        ]
        var listing = ListingHrefs(client: client)
        for href in hrefs + hrefs.reversed() {
            #expect(listing.path(ofHref: href) == client.path(ofHref: href), "\(href)")
        }
        await client.shutdown()
    }
}
