import Foundation

/// Who sent a request: the calling process and its credentials (fuse_req_ctx).
public struct RequestContext: Sendable, Hashable {
    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32

    public init(uid: UInt32, gid: UInt32, pid: Int32) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
    }
}

/// The file type bits of st_mode, as FUSE and `struct stat` use them.
public enum FileType: UInt32, Sendable {
    case regular = 0o100000
    case directory = 0o040000
    case symlink = 0o120000

    /// The d_type value readdir reports for this type.
    public var directoryEntryType: UInt8 {
        switch self {
        case .regular: 8  // DT_REG
        case .directory: 4  // DT_DIR
        case .symlink: 10  // DT_LNK
        }
    }
}

/// The attributes of one inode, as `stat` shows them.
public struct FileAttributes: Sendable, Hashable {
    public var inode: InodeNumber
    public var type: FileType
    /// Permission bits (0o7777).
    public var permissions: UInt16
    public var linkCount: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var size: UInt64
    /// 512-byte blocks actually stored on this machine (`du`).
    public var blocks: UInt64
    public var accessTime: FileTime
    public var modificationTime: FileTime
    public var changeTime: FileTime
    /// The preferred I/O size (st_blksize): what buffered readers (stdio, Python's `open`) ask
    /// for at once, and so what their first byte waits for (DECISIONS 74).
    public var blockSize: UInt32

    public init(
        inode: InodeNumber, type: FileType, permissions: UInt16, linkCount: UInt32 = 1, uid: UInt32 = 0,
        gid: UInt32 = 0, size: UInt64, blocks: UInt64, accessTime: FileTime, modificationTime: FileTime,
        changeTime: FileTime, blockSize: UInt32 = 128 << 10
    ) {
        self.inode = inode
        self.type = type
        self.permissions = permissions
        self.linkCount = linkCount
        self.uid = uid
        self.gid = gid
        self.size = size
        self.blocks = blocks
        self.accessTime = accessTime
        self.modificationTime = modificationTime
        self.changeTime = changeTime
        self.blockSize = blockSize
    }

    /// st_mode: type and permissions together.
    public var mode: UInt32 { type.rawValue | UInt32(permissions & 0o7777) }
}

/// The answer to lookup (and each readdirplus entry): an inode with its attributes and how long
/// the kernel may cache them. An entry with `inode == 0` is a negative entry: the name does not
/// exist, and the kernel may remember that for `entryTimeout`.
public struct Entry: Sendable, Hashable {
    public var attributes: FileAttributes?
    public var generation: UInt64
    public var attributeTimeout: Duration
    public var entryTimeout: Duration

    public init(attributes: FileAttributes, generation: UInt64 = 0, attributeTimeout: Duration, entryTimeout: Duration)
    {
        self.attributes = attributes
        self.generation = generation
        self.attributeTimeout = attributeTimeout
        self.entryTimeout = entryTimeout
    }

    private init(negativeTimeout: Duration) {
        self.attributes = nil
        self.generation = 0
        self.attributeTimeout = .zero
        self.entryTimeout = negativeTimeout
    }

    /// "No such name", cached by the kernel for `timeout`.
    public static func negative(timeout: Duration) -> Entry { Entry(negativeTimeout: timeout) }

    /// The inode this entry names, or 0 for a negative entry.
    public var inode: InodeNumber { attributes?.inode ?? InodeNumber(0) }
}

/// Attributes with the time the kernel may cache them (the answer to getattr).
public struct AttributesReply: Sendable, Hashable {
    public var attributes: FileAttributes
    public var timeout: Duration

    public init(attributes: FileAttributes, timeout: Duration) {
        self.attributes = attributes
        self.timeout = timeout
    }
}

/// The answer to open/opendir: the handle and how the kernel should cache the file's pages.
public struct OpenReply: Sendable, Hashable {
    public var handle: FileHandle
    /// Keep the page cache from earlier opens: the content has not changed since.
    public var keepCache: Bool
    /// Bypass the page cache for this handle.
    public var directIO: Bool
    /// For directories: the kernel may cache the listing.
    public var cacheDirectory: Bool
    /// The kernel reads (and writes) this backing file itself instead of sending requests (FUSE
    /// passthrough); with `directIO` reads and writes still come as requests and only mmap uses
    /// it. `keepCache` does not apply. Once an inode has a handle with a backing file, the kernel
    /// fails (EIO) every other open of it that does not name the same one.
    public var backing: BackingID?
    /// The kernel sends no FLUSH when a descriptor of this handle is closed (FOPEN_NOFLUSH), so
    /// that close waits for no request: for handles with nothing to save at close.
    public var skipsFlush: Bool

    public init(
        handle: FileHandle, keepCache: Bool = false, directIO: Bool = false, cacheDirectory: Bool = false,
        backing: BackingID? = nil, skipsFlush: Bool = false
    ) {
        self.handle = handle
        self.keepCache = keepCache
        self.directIO = directIO
        self.cacheDirectory = cacheDirectory
        self.backing = backing
        self.skipsFlush = skipsFlush
    }
}

/// Something that owns an open file descriptor and keeps it open while it is referenced.
public protocol FileDescriptorOwner: AnyObject, Sendable {
    var fileDescriptor: Int32 { get }
}

/// The answer to read: bytes in memory, or a range of a file the kernel can splice from.
public enum ReadReply: Sendable {
    case bytes([UInt8])
    /// `length` bytes of `file` at `offset`; the owner keeps the descriptor open until the reply
    /// has been sent.
    case fileRange(file: any FileDescriptorOwner, offset: UInt64, length: Int)
}

/// Filesystem statistics (statvfs).
public struct FileSystemStatistics: Sendable, Hashable {
    public var blockSize: UInt64
    public var totalBlocks: UInt64
    public var freeBlocks: UInt64
    public var availableBlocks: UInt64
    public var totalFiles: UInt64
    public var freeFiles: UInt64
    public var maximumNameLength: UInt64

    public init(
        blockSize: UInt64, totalBlocks: UInt64, freeBlocks: UInt64, availableBlocks: UInt64, totalFiles: UInt64,
        freeFiles: UInt64, maximumNameLength: UInt64 = 255
    ) {
        self.blockSize = blockSize
        self.totalBlocks = totalBlocks
        self.freeBlocks = freeBlocks
        self.availableBlocks = availableBlocks
        self.totalFiles = totalFiles
        self.freeFiles = freeFiles
        self.maximumNameLength = maximumNameLength
    }
}

/// What the kernel and libfuse agreed at init, and what the filesystem asks for.
public struct ConnectionSettings: Sendable, Hashable {
    /// Largest write request, in bytes.
    public var maxWrite: UInt32 = 1 << 20
    /// Largest read-ahead the kernel asks for, in bytes.
    public var maxReadahead: UInt32 = 1 << 20
    /// Requests the kernel keeps in flight in the background (read-ahead, async reads).
    public var maxBackground: UInt16 = 64
    /// Use READDIRPLUS (attributes with listings).
    public var readdirplus: Bool = true
    /// Let the kernel cache symlink targets.
    public var cacheSymlinks: Bool = true
    /// Ask the kernel for FUSE passthrough (`BackingFiles`). The kernel offers it from 6.9 on;
    /// using it needs root (CAP_SYS_ADMIN).
    public var passthrough: Bool = false

    public init() {}
}
