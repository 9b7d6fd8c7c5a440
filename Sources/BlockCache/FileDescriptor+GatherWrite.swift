import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

extension FileDescriptor {
    /// Writes `pieces` one after the other from `offset` with as few system calls as the kernel
    /// allows (`pwritev`, at most 1 024 pieces a call: Linux's `UIO_MAXIOV`), retrying short writes
    /// and EINTR.
    ///
    /// A fetch's bytes arrive as the network's buffers (64 KiB each from the HTTP client), and the
    /// cache sink hands over all that queued while it was writing: one call for the lot instead of
    /// one per buffer.
    func writeAll(_ pieces: [any ContiguousBytes & Sendable], toAbsoluteOffset offset: Int64) throws {
        try Self.withBuffers(pieces[...], []) { buffers in
            var vectors = buffers.filter { $0.count > 0 }.map {
                iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count)
            }
            var position = offset
            var first = 0
            while first < vectors.count {
                let batch = min(vectors.count - first, 1024)
                let written = vectors[first...].withUnsafeBufferPointer {
                    pwritev(rawValue, $0.baseAddress, Int32(batch), off_t(position))
                }
                if written < 0, errno == EINTR { continue }
                if written < 0 { throw Errno(rawValue: errno) }
                // A regular file takes at least a byte of a non-empty write, or fails with an errno.
                if written == 0 { throw Errno.ioError }
                position += Int64(written)
                // Skip what was written: whole vectors, then the written part of the next one.
                var remaining = written
                while remaining > 0, remaining >= vectors[first].iov_len {
                    remaining -= vectors[first].iov_len
                    first += 1
                }
                if remaining > 0 {
                    vectors[first].iov_base += remaining
                    vectors[first].iov_len -= remaining
                }
            }
        }
    }

    /// Calls `body` with the bytes of every piece in reach at once.
    private static func withBuffers(
        _ pieces: ArraySlice<any ContiguousBytes & Sendable>, _ collected: [UnsafeRawBufferPointer],
        _ body: ([UnsafeRawBufferPointer]) throws -> Void
    ) throws {
        guard let piece = pieces.first else { return try body(collected) }
        try piece.withUnsafeBytes { try withBuffers(pieces.dropFirst(), collected + [$0], body) }
    }
}
