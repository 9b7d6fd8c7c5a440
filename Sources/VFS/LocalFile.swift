import FileProviderKit
import FuseKit
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// An open descriptor of a file's local content (LocalFileFolder), shared by a handle's reads and
/// writes and lent to read replies; closed when the last user lets go.
final class LocalFile: FileDescriptorOwner {
    let descriptor: FileDescriptor
    /// Tells the folder that this user let go (it counts users, so eviction leaves them alone).
    private let onClose: @Sendable () -> Void

    init(descriptor: FileDescriptor, onClose: @escaping @Sendable () -> Void = {}) {
        self.descriptor = descriptor
        self.onClose = onClose
    }

    deinit {
        try? descriptor.close()
        onClose()
    }

    var fileDescriptor: Int32 { descriptor.rawValue }

    /// The current length of the content.
    func size() async throws -> UInt64 {
        let descriptor = self.descriptor
        return try await BlockingIO.run { UInt64(try descriptor.seek(offset: 0, from: .end)) }
    }

    func write(_ bytes: [UInt8], at offset: UInt64) async throws {
        let descriptor = self.descriptor
        try await BlockingIO.run {
            _ = try bytes.withUnsafeBytes { try descriptor.writeAll(toAbsoluteOffset: Int64(offset), $0) }
        }
    }

    func truncate(to size: UInt64) async throws {
        let descriptor = self.descriptor
        try await BlockingIO.run { try descriptor.resize(to: Int64(size)) }
    }

    /// Extends the content to cover `range` (fallocate mode 0), allocating the blocks.
    func allocate(_ range: Range<UInt64>) async throws {
        let descriptor = self.descriptor
        try await BlockingIO.run {
            let status = posix_fallocate(descriptor.rawValue, off_t(range.lowerBound), off_t(range.count))
            guard status == 0 else { throw Errno(rawValue: status) }
        }
    }

    /// Sets the content's modification time (and leaves its access time alone).
    func setModification(_ time: Timestamp) async throws {
        let descriptor = self.descriptor
        try await BlockingIO.run {
            let times = [
                timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2),  // UTIME_OMIT, not imported by Swift
                timespec(tv_sec: Int(time.seconds), tv_nsec: Int(time.nanoseconds)),
            ]
            guard futimens(descriptor.rawValue, times) == 0 else { throw Errno(rawValue: errno) }
        }
    }

    /// Makes the written bytes durable (fsync).
    func synchronize() async throws {
        let descriptor = self.descriptor
        try await BlockingIO.run {
            guard fsync(descriptor.rawValue) == 0 else { throw Errno(rawValue: errno) }
        }
    }
}
