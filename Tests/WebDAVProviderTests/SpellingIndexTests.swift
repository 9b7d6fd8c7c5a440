import Testing

@testable import WebDAVProvider

@Suite struct SpellingIndexTests {
    /// Looks `text` up through borrowed bytes, as the XML parser does.
    static func number(of text: String, in index: SpellingIndex) -> Int? {
        Array(text.utf8).withUnsafeBufferPointer { index.number(of: $0) }
    }

    @Test("strings keep the numbers they were added with as the table grows; others are not found")
    func numbersSurviveGrowth() {
        var index = SpellingIndex()
        let texts = [""] + (0..<1000).map { "d:name\($0)" }
        for (number, text) in texts.enumerated() {
            #expect(Self.number(of: text, in: index) == nil)
            #expect(Array(text.utf8).withUnsafeBufferPointer { index.add($0) } == number)
        }
        for (number, text) in texts.enumerated() {
            #expect(Self.number(of: text, in: index) == number)
            #expect(index.spellings[number] == Array(text.utf8))
        }
        #expect(Self.number(of: "d:name1000", in: index) == nil)
        #expect(Self.number(of: "d:name", in: index) == nil)
    }
}
