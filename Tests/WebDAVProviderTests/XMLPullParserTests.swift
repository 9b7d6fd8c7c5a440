import Testing

@testable import WebDAVProvider

@Suite struct XMLPullParserTests {
    static let document = """
        <?xml version="1.0" encoding="utf-8"?>
        <!-- a comment -->
        <d:multistatus xmlns:d="DAV:" xmlns:x='urn:x'>
          <d:response><d:href>/dav/a%20b</d:href><x:e a="1 &gt; 0"/><![CDATA[<raw>]]>&lt;&#233;&#x4E2D;&amp;</d:response>
        </d:multistatus>
        """

    /// An event with its name or text spelled out (the parser's own events hold numbers and
    /// places in its storage).
    enum Readable: Equatable {
        case start(XMLPullParser.Name)
        case end(XMLPullParser.Name)
        case text([UInt8])
    }

    /// Feeds `bytes` and spells out the events, before the next feed makes their texts unreadable.
    static func feed(_ parser: inout XMLPullParser, _ bytes: some Sequence<UInt8>) throws -> [Readable] {
        try parser.feed(bytes).map { event in
            switch event {
            case .start(let id): .start(parser.name(id))
            case .end(let id): .end(parser.name(id))
            case .text(let text): .text(Array(parser.text(text)))
            }
        }
    }

    static let expected: [Readable] = [
        .start(.init(namespace: "DAV:", local: "multistatus")),
        .start(.init(namespace: "DAV:", local: "response")),
        .start(.init(namespace: "DAV:", local: "href")),
        .text(Array("/dav/a%20b".utf8)),
        .end(.init(namespace: "DAV:", local: "href")),
        .start(.init(namespace: "urn:x", local: "e")),
        .end(.init(namespace: "urn:x", local: "e")),
        .text(Array("<raw>".utf8)),
        .text(Array("<é中&".utf8)),
        .end(.init(namespace: "DAV:", local: "response")),
        .end(.init(namespace: "DAV:", local: "multistatus")),
    ]

    /// Joins adjacent text events and drops white space between elements, which is where
    /// different splits of the input may legitimately differ.
    static func normalized(_ events: [Readable]) -> [Readable] {
        var result: [Readable] = []
        for event in events {
            if case .text(let bytes) = event {
                if bytes.allSatisfy({ [0x20, 0x0A, 0x09, 0x0D].contains($0) }) { continue }
                if case .text(let previous) = result.last {
                    result[result.count - 1] = .text(previous + bytes)
                    continue
                }
            }
            result.append(event)
        }
        return result
    }

    @Test func parsesAWholeDocument() throws {
        var parser = XMLPullParser()
        let events = try Self.feed(&parser, Array(Self.document.utf8))
        try parser.finish()
        #expect(Self.normalized(events) == Self.normalized(Self.expected))
    }

    @Test func everySplitPointGivesTheSameEvents() throws {
        let bytes = Array(Self.document.utf8)
        for split in 0...bytes.count {
            var parser = XMLPullParser()
            let events = try Self.feed(&parser, bytes[..<split]) + Self.feed(&parser, bytes[split...])
            try parser.finish()
            #expect(Self.normalized(events) == Self.normalized(Self.expected), "split at \(split)")
        }
    }

    @Test func byteByByteGivesTheSameEvents() throws {
        var parser = XMLPullParser()
        var events: [Readable] = []
        for byte in Self.document.utf8 { events += try Self.feed(&parser, [byte]) }
        try parser.finish()
        #expect(Self.normalized(events) == Self.normalized(Self.expected))
    }

    @Test func prefixesResolveByTheDeclarationsInScope() throws {
        let text = """
            <r xmlns="urn:default" xmlns:p="urn:a"><p:n/><c xmlns:p="urn:b" xmlns = 'urn:inner'><p:n/><n/></c><p:n/><n/></r>
            """
        var parser = XMLPullParser()
        let starts = try Self.feed(&parser, Array(text.utf8)).compactMap { event in
            if case .start(let name) = event { "\(name.namespace) \(name.local)" } else { nil }
        }
        try parser.finish()
        #expect(
            starts == [
                "urn:default r", "urn:a n", "urn:inner c", "urn:b n", "urn:inner n", "urn:a n", "urn:default n",
            ])
    }

    @Test(arguments: [
        "<a><b></a>", "<a>", "<a></a><b/>", "text<a/>", "<x:a/>", "<a>&bogus;</a>",
        "<!DOCTYPE a [<!ENTITY e \"boom\">]><a/>", "<a b=c/>", "", "<a b='&bogus;'/>", "<a xmlns:p='&bogus;'/>",
        "<r><a xmlns:p='urn:x'/><p:b/></r>",
    ])
    func refusesMalformedDocuments(_ text: String) {
        #expect(throws: XMLPullParser.Malformed.self) {
            var parser = XMLPullParser()
            _ = try parser.feed(Array(text.utf8))
            try parser.finish()
        }
    }
}
