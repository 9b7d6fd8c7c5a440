import Testing

@testable import WebDAVProvider

@Suite struct ExtendedAttributesTests {
    @Test func bytesSurviveTheDeadPropertyAndItsParse() throws {
        let attributes: [String: [UInt8]] = [
            "user.binary": [0, 0xFF, 0x0A, 0x3C, 0x26], "user.text": Array("<a&b>".utf8),
        ]
        let body = ExtendedAttributes.proppatchBody(attributes)
        let text = try #require(body.split(separator: ">").first { $0.hasPrefix("{") }).split(separator: "<").first
        #expect(ExtendedAttributes.decode(String(try #require(text))) == attributes)
        let answer = """
            <?xml version="1.0" encoding="utf-8"?>
            <D:multistatus xmlns:D="DAV:" xmlns:x="\(ExtendedAttributes.namespace)"><D:response>
            <D:href>/dav/f</D:href>
            <D:propstat><D:prop><x:xattrs>\(ExtendedAttributes.encode(attributes))</x:xattrs></D:prop>
            <D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response></D:multistatus>
            """
        var parser = MultistatusParser()
        let response = try #require(try parser.feed(Array(answer.utf8)).first)
        #expect(response.extendedAttributes == attributes)
        #expect(response.extendedAttributesStatus == 200)
    }

    @Test func aRefusalShowsAsThePropertysStatus() throws {
        let answer = """
            <?xml version="1.0" encoding="UTF-8"?><D:multistatus xmlns:D="DAV:"><D:response><D:href>/dav/f</D:href>\
            <D:propstat><D:prop><xattrs xmlns="\(ExtendedAttributes.namespace)"></xattrs></D:prop>\
            <D:status>HTTP/1.1 403 Forbidden</D:status></D:propstat></D:response></D:multistatus>
            """
        var parser = MultistatusParser()
        let response = try #require(try parser.feed(Array(answer.utf8)).first)
        #expect(response.extendedAttributes == nil)
        #expect(response.extendedAttributesStatus == 403)
    }

    @Test func somethingElsesPropertyIsNotTaken() {
        #expect(ExtendedAttributes.decode("not json") == nil)
        #expect(ExtendedAttributes.decode(#"{"security.selinux":"AA=="}"#) == nil)
    }
}
