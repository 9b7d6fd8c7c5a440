/// Reads a PROPFIND or REPORT answer (`207 Multi-Status`) as it streams in, one `response` at a
/// time.
///
/// Only the properties fpfs asks for are kept; a property counts only from a `propstat` whose
/// status is 200, so a server that says "404 Not Found" for `getetag` is taken as giving none.
struct MultistatusParser {
    /// One `response` of the answer: the resource's href and the properties the server gave.
    struct Response: Equatable, Sendable {
        var href: String = ""
        /// The status of a response that carries no properties (a `404` for a vanished member).
        var status: Int?
        var isCollection = false
        var contentLength: UInt64?
        var etag: String?
        var lastModified: String?
        var creationDate: String?
        /// A stable identifier from ownCloud or Nextcloud (`oc:fileid`, else `oc:id`).
        var fileID: String?
        /// A collection's `DAV:sync-token` property (RFC 6578).
        var syncToken: String?
        /// True when the `DAV:supported-report-set` property lists `sync-collection`.
        var supportsSyncCollection = false
        /// The user's extended attributes fpfs stored as a dead property (see `ExtendedAttributes`).
        var extendedAttributes: [String: [UInt8]]?
        /// The status the server gave that property (a PROPPATCH's answer tells whether it was kept).
        var extendedAttributesStatus: Int?
    }

    /// The longest text one element may have, however it is split (by comments, CDATA sections,
    /// references): what one token may hold.
    static let maximumTextLength = XMLPullParser.maximumTokenLength
    /// The most bytes one answer may have: 4 GiB, some 10 million entries of a listing. An
    /// answer that goes on beyond it (a hostile server's endless stream) is refused, not spooled
    /// to disk for good.
    static let maximumAnswerLength: UInt64 = 1 << 32
    /// The most responses one answer may have (a folder of 10 million entries).
    static let maximumResponses = 10_000_000

    static let dav = "DAV:"
    static let ownCloud = "http://owncloud.org/ns"
    static let fpfs = ExtendedAttributes.namespace

    /// The elements this reads; every other is `other`.
    private enum Element {
        case multistatus, response, href, status, propstat, prop
        case resourceType, collection, supportedReportSet, syncCollection, syncToken
        case contentLength, etag, lastModified, creationDate, fileID, ownCloudID, extendedAttributes
        case other

        init(_ name: XMLPullParser.Name) {
            switch (name.namespace, name.local) {
            case (MultistatusParser.dav, "multistatus"): self = .multistatus
            case (MultistatusParser.dav, "response"): self = .response
            case (MultistatusParser.dav, "href"): self = .href
            case (MultistatusParser.dav, "status"): self = .status
            case (MultistatusParser.dav, "propstat"): self = .propstat
            case (MultistatusParser.dav, "prop"): self = .prop
            case (MultistatusParser.dav, "resourcetype"): self = .resourceType
            case (MultistatusParser.dav, "collection"): self = .collection
            case (MultistatusParser.dav, "supported-report-set"): self = .supportedReportSet
            case (MultistatusParser.dav, "sync-collection"): self = .syncCollection
            case (MultistatusParser.dav, "sync-token"): self = .syncToken
            case (MultistatusParser.dav, "getcontentlength"): self = .contentLength
            case (MultistatusParser.dav, "getetag"): self = .etag
            case (MultistatusParser.dav, "getlastmodified"): self = .lastModified
            case (MultistatusParser.dav, "creationdate"): self = .creationDate
            case (MultistatusParser.ownCloud, "fileid"): self = .fileID
            case (MultistatusParser.ownCloud, "id"): self = .ownCloudID
            case (MultistatusParser.fpfs, ExtendedAttributes.property): self = .extendedAttributes
            default: self = .other
            }
        }
    }

    private var xml = XMLPullParser()
    /// What each of the XML parser's name numbers stands for here, classified once per name.
    private var elements: [Element] = []
    /// Elements from the root down to the current element.
    private var path: [Element] = []
    private var text: [UInt8] = []
    private var response: Response?
    /// Properties of the current `propstat`, kept only if its status turns out to be 200.
    private var pending = Response()
    private var pendingStatus: Int?
    /// The `sync-token` of a sync-collection REPORT's answer, once read (it follows the responses).
    private(set) var syncToken: String?
    /// Bytes and responses read so far, against `maximumAnswerLength` and `maximumResponses`.
    private var answerLength: UInt64 = 0
    private var responses = 0

    /// Consumes a piece of the body and returns the responses it completed. Throws once the
    /// answer goes beyond one of the bounds above or `XMLPullParser`'s (DECISIONS 183).
    mutating func feed(_ bytes: some Collection<UInt8>) throws(XMLPullParser.Malformed) -> [Response] {
        answerLength += UInt64(bytes.count)
        guard answerLength <= Self.maximumAnswerLength else {
            throw XMLPullParser.Malformed(reason: "an answer longer than \(Self.maximumAnswerLength) bytes")
        }
        var completed: [Response] = []
        for event in try xml.feed(bytes) {
            switch event {
            case .start(let id):
                let element = element(id)
                if path.isEmpty, element != .multistatus {
                    throw XMLPullParser.Malformed(reason: "the answer is <\(xml.name(id).local)>, not a multistatus")
                }
                path.append(element)
                text.removeAll(keepingCapacity: true)
                started(element)
            case .text(let piece):
                let more = xml.text(piece)
                guard text.count + more.count <= Self.maximumTextLength else {
                    throw XMLPullParser.Malformed(
                        reason: "an element's text longer than \(Self.maximumTextLength) bytes")
                }
                text += more
            case .end(let id):
                if let done = ended(element(id)) {
                    responses += 1
                    guard responses <= Self.maximumResponses else {
                        throw XMLPullParser.Malformed(reason: "more than \(Self.maximumResponses) responses")
                    }
                    completed.append(done)
                }
                path.removeLast()
                text.removeAll(keepingCapacity: true)
            }
        }
        return completed
    }

    /// Checks that the answer ended complete.
    func finish() throws(XMLPullParser.Malformed) {
        try xml.finish()
    }

    private mutating func element(_ id: XMLPullParser.NameID) -> Element {
        while elements.count <= id { elements.append(Element(xml.name(elements.count))) }
        return elements[id]
    }

    private mutating func started(_ element: Element) {
        switch element {
        case .response where path.count == 2:
            response = Response()
        case .propstat where isInResponse:
            pending = Response()
            pendingStatus = nil
        case .collection where isInProperty(.resourceType):
            pending.isCollection = true
        case .syncCollection where isInProperty(.supportedReportSet):
            pending.supportsSyncCollection = true
        default:
            break
        }
    }

    private mutating func ended(_ element: Element) -> Response? {
        if element == .syncToken, path.count == 2 {
            syncToken = Self.trimmed(text)
        }
        guard isInResponse else { return nil }
        // Made only where a case reads it: most elements of a response carry none.
        let text = self.text
        var value: String { Self.trimmed(text) }
        switch (element, path.count) {
        case (.response, 2):
            return response.take()
        case (.href, 3):
            response?.href = value
        case (.status, 3):
            response?.status = Self.statusCode(text)
        case (.status, 4):
            pendingStatus = Self.statusCode(text)
        case (.propstat, 3):
            if pending.extendedAttributesStatus != nil { response?.extendedAttributesStatus = pendingStatus }
            if pendingStatus == 200 { merge(pending) }
        case (.contentLength, 5) where isInProp:
            pending.contentLength = UInt64(value)
        case (.etag, 5) where isInProp:
            pending.etag = value.isEmpty ? nil : value
        case (.lastModified, 5) where isInProp:
            pending.lastModified = value.isEmpty ? nil : value
        case (.creationDate, 5) where isInProp:
            pending.creationDate = value.isEmpty ? nil : value
        case (.fileID, 5) where isInProp:
            pending.fileID = value.isEmpty ? nil : value
        case (.ownCloudID, 5) where isInProp:
            if pending.fileID == nil, !value.isEmpty { pending.fileID = value }
        case (.extendedAttributes, 5) where isInProp:
            pending.extendedAttributesStatus = 0
            pending.extendedAttributes = ExtendedAttributes.decode(value)
        case (.syncToken, 5) where isInProp:
            pending.syncToken = value.isEmpty ? nil : value
        default:
            break
        }
        return nil
    }

    /// `text` without leading and trailing XML white space.
    private static func trimmed(_ text: [UInt8]) -> String {
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(decoding: text[first...last], as: UTF8.self)
    }

    /// True inside a `response`. Not `response != nil`: for an `Equatable` wrapped type that
    /// compares two optionals, copying the response each time.
    private var isInResponse: Bool {
        if case .some = response { true } else { false }
    }

    /// True inside `response/propstat/prop`, where properties live.
    private var isInProp: Bool {
        path.count >= 4 && path[2] == .propstat && path[3] == .prop
    }

    /// True when the current element sits in the given property.
    private func isInProperty(_ property: Element) -> Bool {
        path.count >= 6 && path[4] == property && isInProp
    }

    /// Takes a propstat's properties into the response.
    private mutating func merge(_ properties: Response) {
        // Taken out, so that `merged` is the only copy and is changed in place.
        guard var merged = response.take() else { return }
        merged.isCollection = merged.isCollection || properties.isCollection
        merged.contentLength = properties.contentLength ?? merged.contentLength
        merged.etag = properties.etag ?? merged.etag
        merged.lastModified = properties.lastModified ?? merged.lastModified
        merged.creationDate = properties.creationDate ?? merged.creationDate
        merged.fileID = properties.fileID ?? merged.fileID
        merged.syncToken = properties.syncToken ?? merged.syncToken
        merged.supportsSyncCollection = merged.supportsSyncCollection || properties.supportsSyncCollection
        merged.extendedAttributes = properties.extendedAttributes ?? merged.extendedAttributes
        response = merged
    }

    /// 200 from "HTTP/1.1 200 OK": the second word, of one to three digits (read from the bytes,
    /// without splitting them: every propstat has one).
    private static func statusCode(_ line: [UInt8]) -> Int? {
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let first = line.firstIndex(where: { !isSpace($0) }),
            let gap = line[first...].firstIndex(where: isSpace),
            let second = line[gap...].firstIndex(where: { !isSpace($0) })
        else { return nil }
        let word = line[second...].prefix { !isSpace($0) }
        guard word.count <= 3, word.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return nil
        }
        return word.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }
}

extension String {
    /// The string without leading and trailing XML white space.
    var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
