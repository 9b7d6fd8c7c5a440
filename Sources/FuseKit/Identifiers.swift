/// A FUSE inode number. 1 is the root (FUSE_ROOT_ID); 0 means "no inode" (a negative entry).
public struct InodeNumber: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public static let root = InodeNumber(1)

    public static func < (lhs: InodeNumber, rhs: InodeNumber) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "#\(rawValue)" }
}

/// The number a filesystem hands the kernel at open/opendir and gets back with every later
/// request on that handle.
public struct FileHandle: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public var description: String { "fh\(rawValue)" }
}
