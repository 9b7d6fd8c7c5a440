import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Deterministic pseudo-random file contents, fast enough for a 1 GiB fixture in a debug build.
///
/// One 1 MiB block comes from a seeded xorshift generator; MiB number i of the file is that block
/// rotated by i × 4099 bytes (odd, so every MiB of a file under 1 TiB differs). Writing is then
/// two `pwrite`s per MiB with no per-byte work, and a block served at the wrong offset changes the
/// checksum.
enum PatternFile {
    static let blockSize = 1 << 20

    /// Creates (or replaces) `path` with `size` bytes of the pattern for `seed`.
    static func write(to path: String, size: Int, seed: UInt64) throws {
        let block = makeBlock(seed: seed)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw MountTestFailure("cannot create \(path): errno \(errno)") }
        defer { close(fd) }
        try block.withUnsafeBytes { bytes in
            var offset = 0
            var index = 0
            while offset < size {
                let length = min(blockSize, size - offset)
                let rotation = (index &* 4099) % blockSize
                let head = min(length, blockSize - rotation)
                try writeAll(fd, UnsafeRawBufferPointer(rebasing: bytes[rotation..<(rotation + head)]), at: offset)
                if head < length {
                    try writeAll(fd, UnsafeRawBufferPointer(rebasing: bytes[0..<(length - head)]), at: offset + head)
                }
                offset += length
                index += 1
            }
        }
    }

    private static func makeBlock(seed: UInt64) -> [UInt8] {
        var state = seed | 1
        var words = [UInt64](repeating: 0, count: blockSize / 8)
        for index in words.indices {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            words[index] = state
        }
        return words.withUnsafeBytes { Array($0) }
    }

    private static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, at offset: Int) throws {
        var done = 0
        while done < buffer.count {
            let count = pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw MountTestFailure("write failed: errno \(errno)") }
            done += count
        }
    }
}
