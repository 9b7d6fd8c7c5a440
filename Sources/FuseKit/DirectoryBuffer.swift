/// The entries of one readdir or readdirplus answer, limited to the size the kernel asked for.
///
/// A filesystem appends entries until `append` returns false; only appended entries reach the
/// kernel. For readdirplus each appended entry with an inode counts as a lookup, so the
/// filesystem must count exactly the entries that were accepted.
public struct DirectoryBuffer: Sendable {
    /// One accepted entry.
    public struct Item: Sendable, Hashable {
        public var name: [UInt8]
        public var entry: Entry
        /// The offset of the entry after this one: what the kernel sends back to continue.
        public var nextOffset: UInt64
    }

    public let capacity: Int
    /// Whether this is a readdirplus answer (entries carry attributes and count as lookups).
    public let isPlus: Bool
    public private(set) var items: [Item] = []
    public private(set) var usedBytes = 0

    public init(capacity: Int, isPlus: Bool) {
        self.capacity = capacity
        self.isPlus = isPlus
    }

    /// Adds an entry if it fits; returns false (and adds nothing) when the buffer is full.
    /// For plain readdir only the inode and type of `entry.attributes` are used.
    public mutating func append(name: [UInt8], entry: Entry, nextOffset: UInt64) -> Bool {
        let size = DirectoryBuffer.entrySize(nameLength: name.count, isPlus: isPlus)
        guard usedBytes + size <= capacity else { return false }
        usedBytes += size
        items.append(Item(name: name, entry: entry, nextOffset: nextOffset))
        return true
    }

    /// Bytes one entry takes in the kernel's format: struct fuse_dirent (24 bytes and the name,
    /// padded to 8), preceded for readdirplus by struct fuse_entry_out (128 bytes).
    public static func entrySize(nameLength: Int, isPlus: Bool) -> Int {
        let dirent = (24 + nameLength + 7) & ~7
        return isPlus ? dirent + 128 : dirent
    }
}
