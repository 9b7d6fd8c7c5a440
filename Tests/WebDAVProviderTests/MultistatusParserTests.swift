import Testing

@testable import WebDAVProvider

@Suite struct MultistatusParserTests {
    static let answer = """
        <?xml version="1.0" encoding="utf-8"?>
        <D:multistatus xmlns:D="DAV:" xmlns:ns0="http://owncloud.org/ns">
        <D:response>
          <D:href>/dav/docs/</D:href>
          <D:propstat><D:prop>
            <D:resourcetype><D:collection/></D:resourcetype>
            <D:getlastmodified>Sun, 06 Nov 1994 08:49:37 GMT</D:getlastmodified>
          </D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>
          <D:propstat><D:prop><D:getcontentlength/><ns0:fileid/></D:prop>
            <D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>
        </D:response>
        <D:response>
          <D:href>/dav/docs/read%20me.txt</D:href>
          <D:propstat><D:prop>
            <D:resourcetype/>
            <D:getcontentlength>42</D:getcontentlength>
            <D:getetag>"2a-5e3f"</D:getetag>
            <D:creationdate>2024-01-02T03:04:05.25Z</D:creationdate>
            <ns0:fileid>00000123oc</ns0:fileid>
          </D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>
        </D:response>
        <D:response><D:href>/dav/docs/gone</D:href><D:status>HTTP/1.1 404 Not Found</D:status></D:response>
        </D:multistatus>
        """

    @Test func readsEachResponseAndOnlyPropertiesWithStatus200() throws {
        var parser = MultistatusParser()
        var responses: [MultistatusParser.Response] = []
        for chunk in Array(Self.answer.utf8).chunked(into: 7) { responses += try parser.feed(chunk) }
        try parser.finish()
        #expect(responses.count == 3)
        #expect(responses[0].href == "/dav/docs/")
        #expect(responses[0].isCollection)
        #expect(responses[0].contentLength == nil)
        #expect(responses[0].fileID == nil)
        #expect(responses[0].lastModified == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(responses[1].href == "/dav/docs/read%20me.txt")
        #expect(!responses[1].isCollection)
        #expect(responses[1].contentLength == 42)
        #expect(responses[1].etag == "\"2a-5e3f\"")
        #expect(responses[1].creationDate == "2024-01-02T03:04:05.25Z")
        #expect(responses[1].fileID == "00000123oc")
        #expect(responses[2].status == 404)
    }

    @Test func readsSyncTokensAndWhetherSyncCollectionIsSupported() throws {
        let answer = """
            <d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/a</d:href>
            <d:status>HTTP/1.1 404 Not Found</d:status></d:response><d:response><d:href>/dav/</d:href>
            <d:status>HTTP/1.1 507 Insufficient Storage</d:status><d:error><d:number-of-matches-within-limits/>
            </d:error></d:response><d:sync-token>http://sabre.io/ns/sync/7</d:sync-token></d:multistatus>
            """
        var parser = MultistatusParser()
        let members = try parser.feed(Array(answer.utf8))
        try parser.finish()
        #expect(members.map(\.status) == [404, 507])
        #expect(parser.syncToken == "http://sabre.io/ns/sync/7")

        let root = { (reports: String) in
            """
            <d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/</d:href><d:propstat><d:prop>
            <d:sync-token>t1</d:sync-token><d:supported-report-set>\(reports)</d:supported-report-set>
            </d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>
            """
        }
        let report = { (name: String) in "<d:supported-report><d:report><d:\(name)/></d:report></d:supported-report>" }
        for (reports, offered) in [
            (report("expand-property") + report("sync-collection"), true), (report("expand-property"), false),
        ] {
            var parser = MultistatusParser()
            let entry = try #require(try parser.feed(Array(root(reports).utf8)).first)
            #expect(entry.supportsSyncCollection == offered && entry.syncToken == "t1")
            #expect(parser.syncToken == nil, "a property's sync-token is not the answer's")
        }
    }

    /// White space between a value's pieces is kept, and only around the value dropped, fed
    /// whole or a byte at a time.
    @Test(arguments: [1, 1 << 20])
    func aValueInPiecesKeepsTheWhiteSpaceBetweenThem(chunkSize: Int) throws {
        let answer = """
            <d:multistatus xmlns:d="DAV:"><d:response> <d:href>
             /dav/a%20b </d:href><d:propstat> <d:prop>
            <d:getetag> <![CDATA["a]]> <![CDATA[b"]]> </d:getetag><d:getlastmodified> &#32;x &amp; y
            </d:getlastmodified></d:prop><d:status> HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>
            """
        var parser = MultistatusParser()
        var responses: [MultistatusParser.Response] = []
        for chunk in Array(answer.utf8).chunked(into: chunkSize) { responses += try parser.feed(chunk) }
        try parser.finish()
        #expect(responses.map(\.href) == ["/dav/a%20b"])
        #expect(responses.first?.etag == "\"a b\"")
        #expect(responses.first?.lastModified == "x & y")
    }

    @Test func refusesAnAnswerThatIsNotAMultistatus() {
        var parser = MultistatusParser()
        #expect(throws: XMLPullParser.Malformed.self) { _ = try parser.feed(Array("<html><body/></html>".utf8)) }
    }

    /// Hostile answers, each far beyond one of the parser's bounds, fed in network-sized pieces:
    /// each is refused as malformed once it passes its bound, long before its end (issue 51,
    /// item 14). The parser's memory is what it holds when it throws.
    @Test(
        "hostile answers are refused at their bound: deep nesting, many names, comment- or CDATA-split text",
        arguments: [
            ("nesting", "<d:response>", 0),
            ("names", "<d:a%d/>", 0),
            ("comment-split text", "<d:href>", 1),
            ("CDATA-split text", "<d:href>", 2),
        ])
    func hostileAnswersAreRefused(what: String, repeated: String, split: Int) throws {
        var parser = MultistatusParser()
        _ = try parser.feed(Array(#"<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"><d:response>"#.utf8))
        if split > 0 { _ = try parser.feed(Array(repeated.utf8)) }
        var fed = 0
        #expect(throws: XMLPullParser.Malformed.self, "\(what)") {
            for piece in 0..<2000 {
                let text: String
                switch split {
                case 1: text = String(repeating: "abcdefgh<!---->", count: 4096)
                case 2: text = String(repeating: "<![CDATA[abcdefgh]]>", count: 4096)
                default:
                    text = (0..<4096).map { repeated.replacingOccurrences(of: "%d", with: "\(piece)x\($0)") }
                        .joined()
                }
                let bytes = Array(text.utf8)
                fed += bytes.count
                _ = try parser.feed(bytes)
            }
        }
        #expect(fed < 64 << 20, "\(what): \(fed) bytes were read before the answer was refused")
    }

    @Test func datesBeyondTheStoresRangeAreClamped() {
        #expect(HTTPDate.parse("Fri, 31 Dec 9999 23:59:59 GMT") == .latest)
        #expect(HTTPDate.parse("Mon, 01 Jan 1000 00:00:00 GMT") == .earliest)
        #expect(HTTPDate.parseISO8601("2300-01-01T00:00:00Z") == .latest)
        #expect(HTTPDate.parse("Wed, 01 Jan 2262 00:00:00 GMT")?.seconds == 9_214_646_400, "inside the range")
    }

    @Test func datesParse() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")?.seconds == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT")?.seconds == 784_111_777)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994")?.seconds == 784_111_777)
        #expect(HTTPDate.parse("sun, 06 NOV 1994 08:49:37 gmt")?.seconds == 784_111_777, "names in any case")
        #expect(HTTPDate.parse("yesterday") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 CET") == nil, "the fixed form's length, not its zone")
        #expect(HTTPDate.parse("Sun, 06 Nox 1994 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:4x:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 PST") == nil, "only GMT (UTC) is HTTP's")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08::37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nox 1994 08:49:37 GMT") == nil)
        let iso = HTTPDate.parseISO8601("2024-01-02T03:04:05.25Z")
        #expect(iso?.seconds == 1_704_164_645)
        #expect(iso?.nanoseconds == 250_000_000)
        #expect(HTTPDate.parseISO8601("2024-01-02T04:04:05+01:00")?.seconds == 1_704_164_645)
    }
}

extension Array {
    func chunked(into size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
