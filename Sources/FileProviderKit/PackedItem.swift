/// How items are stored in files (a WebDAV listing's spool, walk snapshots): a length-prefixed
/// binary record. JSON was the first form, and encoding and decoding it (the byte arrays of names
/// and versions become arrays of numbers) took half of the daemon's CPU while listing a folder of
/// 100 000 entries, and a quarter of a change round's while saving a walk.
///
/// Record: UInt32 length of what follows, then the fields of `Item` in declaration order;
/// integers little-endian, byte strings as a UInt32 length and the bytes, optional fields after
/// a presence byte, dictionaries as a count and their pairs in key order.
public enum PackedItem {
    /// Appends the record of `item` to `output`.
    public static func append(_ item: Item, to output: inout [UInt8]) {
        var record = Writer()
        record.string(item.identifier.rawValue)
        record.string(item.parentIdentifier.rawValue)
        record.bytes(item.filename.bytes)
        record.integer(item.kind.rawValue)
        record.integer(item.size)
        record.optional(item.creationDate) { $0.timestamp($1) }
        record.timestamp(item.contentModificationDate)
        record.integer(item.permissions)
        record.integer(item.capabilities.rawValue)
        record.bytes(item.version.content)
        record.bytes(item.version.metadata)
        record.optional(item.symlinkTarget) { $0.bytes($1) }
        record.pairs(item.userInfo) { $0.string($1) }
        record.optional(item.extendedAttributes) { record, attributes in record.pairs(attributes) { $0.bytes($1) } }
        withUnsafeBytes(of: UInt32(record.output.count).littleEndian) { output.append(contentsOf: $0) }
        output.append(contentsOf: record.output)
    }

    /// The next record in `input` from `index`, and the index after it; nil when `input` ends
    /// before the record does (read more and try again). Throws on a record that is not one.
    public static func next(in input: [UInt8], at index: Int) throws -> (item: Item, end: Int)? {
        var header = Reader(input: input, index: index, end: input.count)
        guard let length = try? header.integer(UInt32.self), header.index + Int(length) <= input.count else {
            return nil
        }
        let end = header.index + Int(length)
        var record = Reader(input: input, index: header.index, end: end)
        let identifier = ItemIdentifier(try record.string())
        let parent = ItemIdentifier(try record.string())
        let filename = Filename(bytes: try record.bytes())
        guard let kind = ItemKind(rawValue: try record.integer(UInt8.self)) else { throw Malformed() }
        let size = try record.integer(UInt64.self)
        let creationDate = try record.optional { try $0.timestamp() }
        let modificationDate = try record.timestamp()
        let permissions = try record.integer(UInt16.self)
        let capabilities = ItemCapabilities(rawValue: try record.integer(UInt32.self))
        let content = try record.bytes()
        let metadata = try record.bytes()
        guard content.count <= ItemVersion.maximumLength, metadata.count <= ItemVersion.maximumLength else {
            throw Malformed()
        }
        let symlinkTarget = try record.optional { try $0.bytes() }
        let userInfo = try record.pairs { try $0.string() }
        let attributes = try record.optional { record in try record.pairs { try $0.bytes() } }
        guard record.index == end else { throw Malformed() }
        let item = Item(
            identifier: identifier, parentIdentifier: parent, filename: filename, kind: kind, size: size,
            creationDate: creationDate, contentModificationDate: modificationDate, permissions: permissions,
            capabilities: capabilities, version: ItemVersion(content: content, metadata: metadata),
            symlinkTarget: symlinkTarget, userInfo: userInfo, extendedAttributes: attributes)
        return (item, end)
    }

    /// A record that does not decode.
    public struct Malformed: Error {}

    /// Writes the fields of a record (also used for the parts of a snapshot that are not items).
    struct Writer {
        var output: [UInt8] = []

        mutating func integer<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { output.append(contentsOf: $0) }
        }

        mutating func bytes(_ value: [UInt8]) {
            integer(UInt32(value.count))
            output.append(contentsOf: value)
        }

        mutating func string(_ value: String) { bytes(Array(value.utf8)) }

        mutating func timestamp(_ value: Timestamp) {
            integer(value.seconds)
            integer(value.nanoseconds)
        }

        mutating func optional<T>(_ value: T?, _ write: (inout Writer, T) -> Void) {
            integer(UInt8(value == nil ? 0 : 1))
            if let value { write(&self, value) }
        }

        mutating func pairs<T>(_ value: [String: T], _ write: (inout Writer, T) -> Void) {
            integer(UInt32(value.count))
            for key in value.keys.sorted() {
                string(key)
                write(&self, value[key]!)
            }
        }
    }

    /// Reads the fields of a record.
    struct Reader {
        let input: [UInt8]
        var index: Int
        /// Where the record ends.
        let end: Int

        mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
            let size = MemoryLayout<T>.size
            guard index + size <= end else { throw Malformed() }
            var value = T.zero
            for offset in 0..<size { value |= T(input[index + offset]) << (8 * offset) }
            index += size
            return value
        }

        mutating func bytes() throws -> [UInt8] {
            let count = Int(try integer(UInt32.self))
            guard index + count <= end else { throw Malformed() }
            defer { index += count }
            return Array(input[index..<index + count])
        }

        mutating func string() throws -> String { String(decoding: try bytes(), as: UTF8.self) }

        mutating func timestamp() throws -> Timestamp {
            let seconds = try integer(Int64.self)
            let nanoseconds = try integer(UInt32.self)
            guard nanoseconds < 1_000_000_000 else { throw Malformed() }
            return Timestamp(seconds: seconds, nanoseconds: nanoseconds)
        }

        mutating func optional<T>(_ read: (inout Reader) throws -> T) throws -> T? {
            switch try integer(UInt8.self) {
            case 0: return nil
            case 1: return try read(&self)
            default: throw Malformed()
            }
        }

        mutating func pairs<T>(_ read: (inout Reader) throws -> T) throws -> [String: T] {
            let count = Int(try integer(UInt32.self))
            var result: [String: T] = [:]
            for _ in 0..<count {
                let key = try string()
                result[key] = try read(&self)
            }
            return result
        }
    }
}
