#if canImport(Glibc)
    import Glibc
#endif

/// A namespace-aware XML tokenizer that takes its input in pieces, as they arrive from the network.
///
/// PROPFIND answers can be megabytes long; parsing them as they stream in keeps memory flat however
/// large the folder. This handles what a multistatus body uses — elements, attributes, namespace
/// declarations, text, the predefined and numeric character references, CDATA, comments and
/// processing instructions — and refuses DTDs, which a WebDAV server has no reason to send.
struct XMLPullParser {
    /// An element's name with its prefix resolved to the namespace it stands for.
    struct Name: Hashable, Sendable {
        var namespace: String
        var local: String
    }

    /// An element name as a number: the parser numbers each distinct name when it first sees it,
    /// so that a reader compares integers where a multistatus repeats a dozen names thousands of
    /// times. `name(_:)` gives the name a number stands for.
    typealias NameID = Int

    /// Text between tags, as a place in the parser's own storage: `text(_:)` gives its bytes until
    /// the next `feed`, so that no event copies them.
    struct Text: Equatable {
        fileprivate var range: Range<Int>
        /// Read from `decoded` (text with character references), else from the input buffer.
        fileprivate var isDecoded: Bool
    }

    enum Event: Equatable {
        case start(NameID)
        case end(NameID)
        case text(Text)
    }

    /// What made the document unreadable, for the error message.
    struct Malformed: Error, CustomStringConvertible {
        var reason: String
        var description: String { "malformed XML: \(reason)" }
    }

    /// The longest markup or text run held while waiting for its end; more means a broken stream.
    static let maximumTokenLength = 1 << 20
    /// The deepest nesting of elements: a multistatus needs 7 or so, and each open element costs
    /// memory, so a hostile answer that never closes its elements is refused here (DECISIONS 183).
    static let maximumDepth = 64
    /// The most distinct qualified names, prefixes, namespaces (and namespace declarations in
    /// scope) one document may use: each is kept for the whole document. A multistatus uses a
    /// few dozen.
    static let maximumNames = 1024

    /// A run of the input, borrowed for the length of one `feed`: slicing the array itself would
    /// count a reference to its storage in and out for every token.
    private typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    private var buffer: [UInt8] = []
    private var position = 0
    /// Text with character references decoded, of the events of the last `feed`.
    private var decoded: [UInt8] = []
    /// Open elements, innermost last: the name, the qualified name as written (to check the end
    /// tag), and how many of `declarations` were in scope before it.
    private var open: [(name: NameID, qualified: Int, scope: Int)] = []
    /// Namespace declarations in scope, innermost last, as numbers: the prefix's in `prefixes`,
    /// the namespace's in `namespaces`.
    private var declarations: [(prefix: Int, namespace: Int)] = []
    private var sawRoot = false
    /// Qualified names seen so far, numbered by their spelling.
    private var qualifiedNames: [QualifiedName] = []
    private var qualifiedSpellings = SpellingIndex()
    /// Prefixes seen so far, by number (0 is the empty one, of the default namespace).
    private var prefixes: SpellingIndex = {
        var prefixes = SpellingIndex()
        _ = prefixes.add(UnsafeBufferPointer(start: nil, count: 0))
        return prefixes
    }()
    /// Namespace names as written in a declaration (servers repeat them on every response), and
    /// the number in `namespaces` of each.
    private var namespaceSpellings = SpellingIndex()
    private var namespaceOfSpelling: [Int] = []
    private var namespaces: [String] = [""]
    /// The names by number, and the number of each name.
    private var names: [Name] = []
    private var nameIDs: [Name: NameID] = [:]

    /// The name `id` stands for.
    func name(_ id: NameID) -> Name { names[id] }

    /// The bytes of a text event of the last `feed`.
    func text(_ text: Text) -> ArraySlice<UInt8> {
        text.isDecoded ? decoded[text.range] : buffer[text.range]
    }

    /// Consumes `bytes` and returns the events they complete, in order. The texts of earlier
    /// events are no longer readable.
    mutating func feed(_ bytes: some Sequence<UInt8>) throws(Malformed) -> [Event] {
        if position > 0, position >= buffer.count / 2 {
            buffer.removeFirst(position)
            position = 0
        }
        decoded.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: bytes)
        var events: [Event] = []
        // Read through a second reference to the storage: `buffer` stays as it is until the next
        // feed.
        let input = buffer
        try input.withUnsafeBufferPointer { (input) throws(Malformed) in
            while position < input.count {
                guard let consumed = try nextToken(in: input, into: &events) else { break }
                position = consumed
            }
        }
        if buffer.count - position > Self.maximumTokenLength {
            throw Malformed(reason: "a token longer than \(Self.maximumTokenLength) bytes")
        }
        return events
    }

    /// Checks that the document ended complete.
    func finish() throws(Malformed) {
        if let innermost = open.last { throw Malformed(reason: "<\(names[innermost.name].local)> is never closed") }
        if !sawRoot { throw Malformed(reason: "no root element") }
        let rest = buffer[position...]
        if !rest.allSatisfy(Self.isSpace) { throw Malformed(reason: "unfinished markup at the end") }
    }

    /// Reads one token of `input` starting at `position`; returns where the next starts, or nil
    /// when the input ends before the token does.
    private mutating func nextToken(in input: UnsafeBufferPointer<UInt8>, into events: inout [Event]) throws(Malformed)
        -> Int?
    {
        let start = position
        guard input[start] == UInt8(ascii: "<") else {
            let from = input.baseAddress! + start
            guard let found = memchr(from, Int32(UInt8(ascii: "<")), input.count - start) else { return nil }
            let end = start + UnsafeRawPointer(from).distance(to: found)
            let text = input[start..<end]
            if open.isEmpty {
                guard text.allSatisfy(Self.isSpace) else { throw Malformed(reason: "text outside the root element") }
            } else {
                events.append(.text(try keep(text)))
            }
            return end
        }
        guard start + 1 < input.count else { return nil }
        let second = input[start + 1]
        guard second == UInt8(ascii: "!") || second == UInt8(ascii: "?") else {
            guard let end = Self.tagEnd(in: input, from: start + 1) else { return nil }
            try tag(input[(start + 1)..<end], into: &events)
            return end + 1
        }
        if Self.hasPrefix("<!--", in: input, at: start) {
            return Self.find("-->", in: input, from: start + 4).map { $0 + 3 }
        }
        if Self.hasPrefix("<![CDATA[", in: input, at: start) {
            guard let end = Self.find("]]>", in: input, from: start + 9) else { return nil }
            guard !open.isEmpty else { throw Malformed(reason: "CDATA outside the root element") }
            events.append(.text(Text(range: (start + 9)..<end, isDecoded: false)))
            return end + 3
        }
        if Self.hasPrefix("<?", in: input, at: start) {
            return Self.find("?>", in: input, from: start + 2).map { $0 + 2 }
        }
        if Self.hasPrefix("<!", in: input, at: start) {
            if input.count - start < 9 { return nil }
            throw Malformed(reason: "a DTD or declaration, which is not accepted")
        }
        guard let end = Self.tagEnd(in: input, from: start + 1) else { return nil }
        try tag(input[(start + 1)..<end], into: &events)
        return end + 1
    }

    /// Handles the inside of `<…>`: a start tag, an end tag or an empty-element tag.
    private mutating func tag(_ body: Bytes, into events: inout [Event]) throws(Malformed) {
        if body.first == UInt8(ascii: "/") {
            let qualified = body.dropFirst().prefix { !Self.isSpace($0) }
            guard let innermost = open.popLast(),
                SpellingIndex.equal(
                    qualifiedSpellings.spellings[innermost.qualified], UnsafeBufferPointer(rebasing: qualified))
            else {
                throw Malformed(reason: "unexpected </\(String(decoding: qualified, as: UTF8.self))>")
            }
            declarations.removeLast(declarations.count - innermost.scope)
            events.append(.end(innermost.name))
            return
        }
        let isEmpty = body.last == UInt8(ascii: "/")
        let content = isEmpty ? body.dropLast() : body
        let qualified = content.prefix { !Self.isSpace($0) }
        guard !qualified.isEmpty else { throw Malformed(reason: "a tag without a name") }
        if open.isEmpty {
            if sawRoot { throw Malformed(reason: "a second root element") }
            sawRoot = true
        }
        let scope = declarations.count
        try declareNamespaces(in: content.dropFirst(qualified.count))
        let number = try knownName(qualified)
        let name = try resolve(number)
        events.append(.start(name))
        if isEmpty {
            declarations.removeLast(declarations.count - scope)
            events.append(.end(name))
        } else {
            guard open.count < Self.maximumDepth else {
                throw Malformed(reason: "elements nested deeper than \(Self.maximumDepth)")
            }
            open.append((name, number, scope))
        }
    }

    /// Throws once a table of names holds `maximumNames`: the document is hostile or broken.
    private static func checkRoom(_ count: Int, of what: String) throws(Malformed) {
        guard count < maximumNames else { throw Malformed(reason: "more than \(maximumNames) distinct \(what)") }
    }

    /// A qualified name's prefix's number, its local name, and the name it resolved to last, by
    /// the namespace its prefix stood for.
    private struct QualifiedName {
        let prefix: Int
        let local: String
        var lastNamespace = -1
        var lastName: NameID = 0
    }

    /// The number of the qualified name `qualified`, numbering it if it is new.
    private mutating func knownName(_ qualified: Bytes) throws(Malformed) -> Int {
        let spelling = UnsafeBufferPointer(rebasing: qualified)
        if let number = qualifiedSpellings.number(of: spelling) { return number }
        try Self.checkRoom(qualifiedNames.count, of: "element names")
        let colon = qualified.firstIndex(of: UInt8(ascii: ":"))
        let prefix = colon.map { qualified[..<$0] } ?? qualified.prefix(0)
        let local = String(decoding: colon.map { qualified[($0 + 1)...] } ?? qualified, as: UTF8.self)
        qualifiedNames.append(QualifiedName(prefix: try prefixNumber(prefix), local: local))
        return qualifiedSpellings.add(spelling)
    }

    /// The number of `prefix`, numbering it if it is new.
    private mutating func prefixNumber(_ prefix: Bytes) throws(Malformed) -> Int {
        let spelling = UnsafeBufferPointer(rebasing: prefix)
        if let number = prefixes.number(of: spelling) { return number }
        try Self.checkRoom(prefixes.spellings.count, of: "namespace prefixes")
        return prefixes.add(spelling)
    }

    /// The number of the name qualified name `number` stands for, by the declarations in scope.
    private mutating func resolve(_ number: Int) throws(Malformed) -> NameID {
        let known = qualifiedNames[number]
        let namespace = declarations.last { $0.prefix == known.prefix }?.namespace ?? (known.prefix == 0 ? 0 : nil)
        guard let namespace else {
            let prefix = String(decoding: prefixes.spellings[known.prefix], as: UTF8.self)
            throw Malformed(reason: "undeclared namespace prefix '\(prefix)'")
        }
        if namespace == known.lastNamespace { return known.lastName }
        let name = Name(namespace: namespaces[namespace], local: known.local)
        let id = nameIDs[name] ?? names.count
        if id == names.count {
            try Self.checkRoom(names.count, of: "names")
            names.append(name)
            nameIDs[name] = id
        }
        qualifiedNames[number].lastNamespace = namespace
        qualifiedNames[number].lastName = id
        return id
    }

    /// Puts the namespace declarations among the attributes of a start tag (`xmlns` and
    /// `xmlns:p`) in scope; other attributes are checked for form and skipped, since no event
    /// carries them.
    private mutating func declareNamespaces(in bytes: Bytes) throws(Malformed) {
        var index = bytes.startIndex
        while true {
            while index < bytes.endIndex, Self.isSpace(bytes[index]) { index += 1 }
            guard index < bytes.endIndex else { return }
            guard let equals = bytes[index...].firstIndex(of: UInt8(ascii: "=")) else {
                throw Malformed(reason: "an attribute without a value")
            }
            var nameEnd = equals
            while nameEnd > index, Self.isSpace(bytes[nameEnd - 1]) { nameEnd -= 1 }
            let name = bytes[index..<nameEnd]
            var quote = equals + 1
            while quote < bytes.endIndex, Self.isSpace(bytes[quote]) { quote += 1 }
            guard quote < bytes.endIndex, bytes[quote] == UInt8(ascii: "\"") || bytes[quote] == UInt8(ascii: "'"),
                let close = bytes[(quote + 1)...].firstIndex(of: bytes[quote])
            else { throw Malformed(reason: "an unquoted attribute value") }
            let value = bytes[(quote + 1)..<close]
            let xmlns = "xmlns".utf8
            if name.starts(with: xmlns),
                name.count == xmlns.count || name[name.startIndex + xmlns.count] == UInt8(ascii: ":")
            {
                let prefix = try prefixNumber(name.dropFirst(xmlns.count + 1))
                try Self.checkRoom(declarations.count, of: "namespace declarations in scope")
                declarations.append((prefix, try knownNamespace(value)))
            } else if value.contains(UInt8(ascii: "&")) {
                _ = try Self.decodeReferences(value)
            }
            index = close + 1
        }
    }

    /// The number of the namespace name an attribute value stands for, references decoded.
    private mutating func knownNamespace(_ value: Bytes) throws(Malformed) -> Int {
        let spelling = UnsafeBufferPointer(rebasing: value)
        if let known = namespaceSpellings.number(of: spelling) { return namespaceOfSpelling[known] }
        try Self.checkRoom(namespaceOfSpelling.count, of: "namespace names")
        let namespace = String(decoding: try Self.decodeReferences(value), as: UTF8.self)
        let number = namespaces.firstIndex(of: namespace) ?? namespaces.count
        if number == namespaces.count { namespaces.append(namespace) }
        namespaceOfSpelling.append(number)
        _ = namespaceSpellings.add(spelling)
        return number
    }

    /// A text event for `text`: its place in the buffer, or with references, the place of its
    /// decoded bytes.
    private mutating func keep(_ text: Bytes) throws(Malformed) -> Text {
        guard text.contains(UInt8(ascii: "&")) else {
            return Text(range: text.startIndex..<text.endIndex, isDecoded: false)
        }
        let start = decoded.count
        decoded += try Self.decodeReferences(text)
        return Text(range: start..<decoded.count, isDecoded: true)
    }

    /// Text with `&lt;`, `&#233;` and the like replaced by the characters they stand for.
    private static func decodeReferences(_ text: Bytes) throws(Malformed) -> [UInt8] {
        guard text.contains(UInt8(ascii: "&")) else { return Array(text) }
        var result: [UInt8] = []
        result.reserveCapacity(text.count)
        var index = text.startIndex
        while index < text.endIndex {
            guard text[index] == UInt8(ascii: "&") else {
                result.append(text[index])
                index += 1
                continue
            }
            guard let semicolon = text[index...].firstIndex(of: UInt8(ascii: ";")), semicolon - index <= 10 else {
                throw Malformed(reason: "an unterminated character reference")
            }
            let name = String(decoding: text[(index + 1)..<semicolon], as: UTF8.self)
            let scalar: Unicode.Scalar?
            switch name {
            case "lt": scalar = "<"
            case "gt": scalar = ">"
            case "amp": scalar = "&"
            case "quot": scalar = "\""
            case "apos": scalar = "'"
            default:
                if name.hasPrefix("#x") || name.hasPrefix("#X") {
                    scalar = UInt32(name.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                } else if name.hasPrefix("#") {
                    scalar = UInt32(name.dropFirst(1)).flatMap(Unicode.Scalar.init)
                } else {
                    scalar = nil
                }
            }
            guard let scalar else { throw Malformed(reason: "unknown reference &\(name);") }
            result.append(contentsOf: String(Character(scalar)).utf8)
            index = semicolon + 1
        }
        return result
    }

    /// The index of the `>` closing a tag that starts before `from`, skipping quoted values.
    private static func tagEnd(in input: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        // Most tags of a multistatus have no attributes: the first `>` ends them, found by memchr
        // rather than a byte at a time, unless a quote comes before it.
        let start = input.baseAddress! + from
        let gt = UInt8(ascii: ">")
        guard let found = memchr(start, Int32(gt), input.count - from) else { return nil }
        let length = UnsafeRawPointer(start).distance(to: found)
        if memchr(start, Int32(UInt8(ascii: "\"")), length) == nil,
            memchr(start, Int32(UInt8(ascii: "'")), length) == nil
        {
            return from + length
        }
        var quote: UInt8?
        var index = from
        while index < input.count {
            let byte = input[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                return index
            }
            index += 1
        }
        return nil
    }

    private static func hasPrefix(_ prefix: StaticString, in input: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard input.count - index >= count else {
            // Undecidable yet only if what is there so far matches the start of the prefix.
            return false
        }
        return prefix.withUTF8Buffer { input[index..<(index + count)].elementsEqual($0) }
    }

    private static func find(_ terminator: StaticString, in input: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        terminator.withUTF8Buffer { needle in
            guard input.count >= needle.count else { return nil }
            var index = from
            while index + needle.count <= input.count {
                if input[index] == needle[0], input[index..<(index + needle.count)].elementsEqual(needle) {
                    return index
                }
                index += 1
            }
            return nil
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
