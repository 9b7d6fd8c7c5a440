import FileProviderKit
import Glibc

/// Thin wrappers over the system calls the provider makes: byte paths in, `POSIXFailure` out,
/// EINTR retried. Every one blocks, so callers run them through `BlockingIO`.
enum POSIX {
    /// One directory entry as readdir reports it; `type` is a `DT_*` value (DT_UNKNOWN on file
    /// systems that do not fill it in).
    struct Entry {
        var name: Filename
        var type: UInt8
    }

    /// The entries of a directory except `.` and `..`, read with opendir/readdir so names that are
    /// not UTF-8 come through as they are.
    static func entries(of path: [UInt8]) throws(POSIXFailure) -> [Entry] {
        guard let directory = path.withCPath({ opendir($0) }) else { throw POSIXFailure("opendir", path) }
        defer { closedir(directory) }
        var entries: [Entry] = []
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 { throw POSIXFailure("readdir", path) }
                return entries
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name == [0x2E] || name == [0x2E, 0x2E] { continue }
            entries.append(Entry(name: Filename(bytes: name), type: entry.pointee.d_type))
        }
    }

    /// The target of a symlink, bytes as stored.
    static func readLink(_ path: [UInt8]) throws(POSIXFailure) -> [UInt8] {
        var capacity = Int(PATH_MAX)
        while true {
            let target = try [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count throws(POSIXFailure) in
                let length = path.withCPath { readlink($0, buffer.baseAddress!, capacity) }
                guard length >= 0 else { throw POSIXFailure("readlink", path) }
                count = length
            }
            if target.count < capacity { return target }
            capacity *= 2
        }
    }

    static func open(_ path: [UInt8], flags: Int32, mode: mode_t = 0) throws(POSIXFailure) -> Int32 {
        try retrying("open", path) { path.withCPath { Glibc.open($0, flags | O_CLOEXEC, mode) } }
    }

    /// Reads up to `count` bytes at `offset`; fewer only at end of file.
    static func read(_ descriptor: Int32, at offset: UInt64, count: Int, path: [UInt8]) throws(POSIXFailure)
        -> [UInt8]
    {
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, filled throws(POSIXFailure) in
            filled = 0
            while filled < count {
                let got = try retrying("read", path) {
                    pread(descriptor, buffer.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
                }
                if got == 0 { break }
                filled += got
            }
        }
    }

    /// Writes all of `bytes` at `offset`.
    static func write(_ descriptor: Int32, _ bytes: [UInt8], at offset: UInt64, path: [UInt8]) throws(POSIXFailure) {
        var written = 0
        while written < bytes.count {
            written += try retrying("write", path) {
                bytes.withUnsafeBytes {
                    pwrite(descriptor, $0.baseAddress! + written, bytes.count - written, off_t(offset) + off_t(written))
                }
            }
        }
    }

    static func truncate(_ descriptor: Int32, to length: UInt64, path: [UInt8]) throws(POSIXFailure) {
        _ = try retrying("truncate", path) { ftruncate(descriptor, off_t(length)) }
    }

    static func synchronize(_ descriptor: Int32, path: [UInt8]) throws(POSIXFailure) {
        _ = try retrying("fsync", path) { fsync(descriptor) }
    }

    static func makeDirectory(_ path: [UInt8], mode: mode_t) throws(POSIXFailure) {
        _ = try retrying("mkdir", path) { path.withCPath { mkdir($0, mode) } }
    }

    static func makeSymlink(_ path: [UInt8], target: [UInt8]) throws(POSIXFailure) {
        _ = try retrying("symlink", path) { target.withCPath { target in path.withCPath { symlink(target, $0) } } }
    }

    /// Sets the permission bits exactly (no umask), on the path or, when given, the open descriptor.
    static func setPermissions(_ path: [UInt8], _ permissions: UInt16, descriptor: Int32? = nil) throws(POSIXFailure) {
        _ = try retrying("chmod", path) {
            if let descriptor { return fchmod(descriptor, mode_t(permissions)) }
            return path.withCPath { chmod($0, mode_t(permissions)) }
        }
    }

    /// Sets the modification time and leaves the access time alone; does not follow a symlink.
    static func setModificationTime(_ path: [UInt8], _ time: Timestamp) throws(POSIXFailure) {
        let omit = timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)  // UTIME_OMIT, not imported by Swift
        let times = [omit, timespec(tv_sec: Int(time.seconds), tv_nsec: Int(time.nanoseconds))]
        _ = try retrying("utimensat", path) {
            path.withCPath { utimensat(AT_FDCWD, $0, times, AT_SYMLINK_NOFOLLOW) }
        }
    }

    /// Renames without ever replacing an existing target (EEXIST instead): renameat2 with
    /// RENAME_NOREPLACE, or — where the file system refuses that flag — a check then a rename.
    static func renameNoReplace(_ source: [UInt8], to target: [UInt8]) throws(POSIXFailure) {
        if let renameat2 {
            let noReplace: UInt32 = 1  // RENAME_NOREPLACE
            let result = source.withCPath { from in
                target.withCPath { renameat2(AT_FDCWD, from, AT_FDCWD, $0, noReplace) }
            }
            if result == 0 { return }
            guard errno == EINVAL else { throw POSIXFailure("rename", source) }
        }
        if (try? FileStatus(path: target)) != nil { throw POSIXFailure("rename", target, code: EEXIST) }
        _ = try retrying("rename", source) { source.withCPath { from in target.withCPath { rename(from, $0) } } }
    }

    /// Opens a file with no name in `folder` (O_TMPFILE), to be given one by `link`; nil where the
    /// file system or kernel has no such files, or /proc (which `link` needs) is not mounted. A
    /// kill -9 before the link leaves nothing behind, where a named temporary would stay.
    static func openUnnamed(in folder: [UInt8], mode: mode_t) throws(POSIXFailure) -> Int32? {
        guard procFileDescriptors else { return nil }
        // O_TMPFILE is __O_TMPFILE | O_DIRECTORY; Swift does not import the macro. 0o20000000 is
        // __O_TMPFILE in asm-generic, which x86-64 and arm64 share.
        let flags = 0o20000000 | O_DIRECTORY | O_WRONLY | O_CLOEXEC
        while true {
            let descriptor = folder.withCPath { Glibc.open($0, flags, mode) }
            if descriptor >= 0 { return descriptor }
            switch errno {
            case EINTR: continue
            case EOPNOTSUPP, EISDIR, EINVAL: return nil
            default: throw POSIXFailure("open", folder)
            }
        }
    }

    /// Gives the unnamed file `descriptor` the name `path`, never replacing one (EEXIST).
    static func link(_ descriptor: Int32, to path: [UInt8]) throws(POSIXFailure) {
        let source = Array("/proc/self/fd/\(descriptor)".utf8)
        _ = try retrying("link", path) {
            source.withCPath { from in path.withCPath { linkat(AT_FDCWD, from, AT_FDCWD, $0, AT_SYMLINK_FOLLOW) } }
        }
    }

    private static let procFileDescriptors = access("/proc/self/fd", F_OK) == 0

    static func remove(_ path: [UInt8], directory: Bool) throws(POSIXFailure) {
        _ = try retrying(directory ? "rmdir" : "unlink", path) {
            path.withCPath { directory ? rmdir($0) : unlink($0) }
        }
    }

    /// The canonical absolute form of `path`, symlinks resolved.
    static func canonical(_ path: [UInt8]) throws(POSIXFailure) -> [UInt8] {
        guard let resolved = path.withCPath({ realpath($0, nil) }) else { throw POSIXFailure("realpath", path) }
        defer { free(resolved) }
        return Array(UnsafeRawBufferPointer(start: resolved, count: strlen(resolved)))
    }

    /// Runs `call` until it does not fail with EINTR; a negative result throws with `errno`.
    private static func retrying<Result: BinaryInteger>(
        _ operation: String, _ path: [UInt8], _ call: () -> Result
    ) throws(POSIXFailure) -> Result {
        while true {
            let result = call()
            if result >= 0 { return result }
            if errno != EINTR { throw POSIXFailure(operation, path) }
        }
    }

    private typealias RenameAt2 =
        @convention(c) (
            Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32
        ) -> Int32

    /// glibc ≥ 2.28 exports renameat2 but declares it only under _GNU_SOURCE, hence dlsym.
    private static let renameat2: RenameAt2? = dlsym(nil, "renameat2").map {
        unsafeBitCast($0, to: RenameAt2.self)
    }
}

extension [UInt8] {
    /// Calls `body` with these bytes as a NUL-terminated C string.
    func withCPath<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try (self + [0]).withUnsafeBufferPointer { bytes in
            try bytes.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }
}
