/// An element of an S3 answer's XML (a listing, an error, a multipart upload's id), read whole.
///
/// S3's answers are plain: elements, text, the five predefined entities and character references,
/// a declaration, no DTD. So this reads just that and refuses anything else (`Malformed`): a
/// server that sends other XML is not one this provider understands.
struct S3XMLElement: Sendable {
    var name: String
    var text = ""
    var children: [S3XMLElement] = []

    /// The first child named `name`.
    func child(_ name: String) -> S3XMLElement? { children.first { $0.name == name } }

    /// The children named `name`.
    func children(_ name: String) -> [S3XMLElement] { children.filter { $0.name == name } }

    /// The text of the first child named `name`.
    func text(of name: String) -> String? { child(name)?.text }

    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    /// The root element of `bytes`.
    static func parse(_ bytes: [UInt8]) throws -> S3XMLElement {
        var stack: [S3XMLElement] = []
        var root: S3XMLElement?
        var index = 0
        let count = bytes.count
        func fail(_ what: String) -> Malformed { Malformed(description: "malformed XML at byte \(index): \(what)") }
        while index < count {
            if bytes[index] != UInt8(ascii: "<") {
                let end = bytes[index...].firstIndex(of: UInt8(ascii: "<")) ?? count
                let text = try decodeText(bytes[index..<end])
                if stack.isEmpty {
                    guard text.allSatisfy(\.isWhitespace) else { throw fail("text outside the root element") }
                } else {
                    stack[stack.count - 1].text += text
                }
                index = end
                continue
            }
            guard let close = bytes[index...].firstIndex(of: UInt8(ascii: ">")) else { throw fail("unclosed tag") }
            let tag = bytes[(index + 1)..<close]
            index = close + 1
            guard let first = tag.first else { throw fail("empty tag") }
            if first == UInt8(ascii: "?") { continue }
            if first == UInt8(ascii: "!") { throw fail("DTDs, comments and CDATA are not expected") }
            if first == UInt8(ascii: "/") {
                let name = String(decoding: tag.dropFirst(), as: UTF8.self).trimmingCharacters(in: .whitespaces)
                guard let open = stack.popLast(), open.name == name else { throw fail("mismatched </\(name)>") }
                if stack.isEmpty {
                    guard root == nil else { throw fail("a second root element") }
                    root = open
                } else {
                    stack[stack.count - 1].children.append(open)
                }
                continue
            }
            let selfClosing = tag.last == UInt8(ascii: "/")
            let body = selfClosing ? tag.dropLast() : tag
            let nameEnd = body.firstIndex(where: { $0 == UInt8(ascii: " ") || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D })
            let element = S3XMLElement(name: String(decoding: body[..<(nameEnd ?? body.endIndex)], as: UTF8.self))
            guard !element.name.isEmpty else { throw fail("a tag without a name") }
            if selfClosing {
                if stack.isEmpty {
                    guard root == nil else { throw fail("a second root element") }
                    root = element
                } else {
                    stack[stack.count - 1].children.append(element)
                }
            } else {
                stack.append(element)
            }
        }
        guard stack.isEmpty, let root else { throw Malformed(description: "malformed XML: the document is incomplete") }
        return root
    }

    /// Text with its entity and character references replaced.
    private static func decodeText(_ bytes: ArraySlice<UInt8>) throws -> String {
        guard bytes.contains(UInt8(ascii: "&")) else { return String(decoding: bytes, as: UTF8.self) }
        // Every piece after an `&` starts with a reference up to its `;`.
        let pieces = bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false)
        var output = Array(pieces[0])
        for piece in pieces.dropFirst() {
            guard let semicolon = piece.firstIndex(of: UInt8(ascii: ";")), semicolon - piece.startIndex <= 12 else {
                throw Malformed(description: "malformed XML: a bare &")
            }
            let reference = String(decoding: piece[..<semicolon], as: UTF8.self)
            let scalar: Unicode.Scalar? =
                switch reference {
                case "amp": "&"
                case "lt": "<"
                case "gt": ">"
                case "quot": "\""
                case "apos": "'"
                default:
                    if reference.hasPrefix("#x") {
                        UInt32(reference.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                    } else if reference.hasPrefix("#") {
                        UInt32(reference.dropFirst(), radix: 10).flatMap(Unicode.Scalar.init)
                    } else {
                        nil
                    }
                }
            guard let scalar else { throw Malformed(description: "malformed XML: unknown reference &\(reference);") }
            output += Array(String(scalar).utf8)
            output += piece[(semicolon + 1)...]
        }
        return String(decoding: output, as: UTF8.self)
    }
}
