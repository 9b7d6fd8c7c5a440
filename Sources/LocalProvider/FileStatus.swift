import FileProviderKit
import Foundation
import Glibc

/// What `statx(2)` says about one path, never following a final symlink.
///
/// statx rather than lstat because it also reports the birth time, which disambiguates a reused
/// inode number (see `LocalTree`) and is the better creation date. Glibc declares statx only under
/// _GNU_SOURCE, which Swift's Glibc module does not define, so the function is looked up with
/// dlsym and its result read at the offsets of the kernel's stable `struct statx` ABI
/// (include/uapi/linux/stat.h).
struct FileStatus: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    var mode: UInt32
    var linkCount: UInt32
    var size: UInt64
    var modification: Timestamp
    var change: Timestamp
    /// Nil where the file system does not record it (or records the epoch, as unpacked images do).
    var birth: Timestamp?

    /// The item kind, or nil for FIFOs, sockets and devices, which the provider does not show.
    var kind: ItemKind? {
        switch mode & UInt32(S_IFMT) {
        case UInt32(S_IFREG): .file
        case UInt32(S_IFDIR): .directory
        case UInt32(S_IFLNK): .symlink
        default: nil
        }
    }

    /// The status of `path`, not following a final symlink.
    init(path: [UInt8]) throws(POSIXFailure) {
        try self.init(operation: "stat", path: path) { buffer in
            path.withCPath { Self.statx(AT_FDCWD, $0, AT_SYMLINK_NOFOLLOW | Self.noAutomount, Self.wanted, buffer) }
        }
    }

    /// The status of an open descriptor; `path` only names it in errors.
    init(descriptor: Int32, path: [UInt8]) throws(POSIXFailure) {
        try self.init(operation: "stat", path: path) { buffer in
            Self.statx(descriptor, "", Self.emptyPath, Self.wanted, buffer)
        }
    }

    private init(
        operation: String, path: [UInt8], call: (UnsafeMutableRawPointer) -> Int32
    ) throws(POSIXFailure) {
        let result: Result<FileStatus, POSIXFailure> = withUnsafeTemporaryAllocation(
            byteCount: 256, alignment: 8
        ) { raw in
            let buffer = raw.baseAddress!
            guard call(buffer) == 0 else { return .failure(POSIXFailure(operation, path)) }
            return .success(FileStatus(statx: UnsafeRawPointer(buffer)))
        }
        self = try result.get()
    }

    private init(statx buffer: UnsafeRawPointer) {
        func timestamp(at offset: Int) -> Timestamp {
            Timestamp(
                seconds: buffer.load(fromByteOffset: offset, as: Int64.self),
                nanoseconds: buffer.load(fromByteOffset: offset + 8, as: UInt32.self))
        }
        let mask = buffer.load(fromByteOffset: 0, as: UInt32.self)
        linkCount = buffer.load(fromByteOffset: 16, as: UInt32.self)
        mode = UInt32(buffer.load(fromByteOffset: 28, as: UInt16.self))
        inode = buffer.load(fromByteOffset: 32, as: UInt64.self)
        size = buffer.load(fromByteOffset: 40, as: UInt64.self)
        let birth = timestamp(at: 80)
        self.birth = mask & Self.birthTimeBit != 0 && birth != Timestamp(seconds: 0, nanoseconds: 0) ? birth : nil
        change = timestamp(at: 96)
        modification = timestamp(at: 112)
        device =
            UInt64(buffer.load(fromByteOffset: 136, as: UInt32.self)) << 32
            | UInt64(buffer.load(fromByteOffset: 140, as: UInt32.self))
    }

    private typealias StatxFunction =
        @convention(c) (
            Int32, UnsafePointer<CChar>, Int32, UInt32, UnsafeMutableRawPointer
        ) -> Int32

    /// glibc ≥ 2.28 exports statx; the provider refuses to start without it (see `isAvailable`).
    private static let function: StatxFunction? = dlsym(nil, "statx").map {
        unsafeBitCast($0, to: StatxFunction.self)
    }

    /// False on a C library too old to have statx.
    static var isAvailable: Bool { function != nil }

    private static func statx(
        _ directory: Int32, _ path: UnsafePointer<CChar>, _ flags: Int32, _ mask: UInt32,
        _ buffer: UnsafeMutableRawPointer
    ) -> Int32 {
        guard let function else {
            errno = ENOSYS
            return -1
        }
        return function(directory, path, flags, mask, buffer)
    }

    // Constants from <linux/stat.h> and <fcntl.h> that Swift does not import without _GNU_SOURCE.
    private static let wanted: UInt32 = 0x7FF | birthTimeBit  // STATX_BASIC_STATS | STATX_BTIME
    private static let birthTimeBit: UInt32 = 0x800  // STATX_BTIME
    private static let emptyPath: Int32 = 0x1000  // AT_EMPTY_PATH
    private static let noAutomount: Int32 = 0x800  // AT_NO_AUTOMOUNT
}
