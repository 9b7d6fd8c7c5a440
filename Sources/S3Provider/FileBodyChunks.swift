import FileProviderKit
import Foundation
import NIOCore

/// `length` bytes of a file from `start` as request-body chunks of 1 MiB, each read off the cooperative
/// threads when the request asks for it; reports what it read to the engine's upload progress.
struct FileBodyChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let url: URL
    let start: Int64
    let length: Int64

    static let chunkSize = 1 << 20

    func makeAsyncIterator() -> Iterator { Iterator(url: url, start: start, length: length) }

    struct Iterator: AsyncIteratorProtocol {
        let url: URL
        let start: Int64
        let length: Int64
        var offset: Int64 = 0
        let progress: (@Sendable (UInt64) -> Void)?

        init(url: URL, start: Int64, length: Int64) {
            self.url = url
            self.start = start
            self.length = length
            progress = UploadProgress.reporter(for: url)
        }

        mutating func next() async throws -> ByteBuffer? {
            let wanted = Int(Swift.min(length - offset, Int64(FileBodyChunks.chunkSize)))
            guard wanted > 0 else { return nil }
            let (path, at) = (url.path, start + offset)
            // Opened per chunk: nothing stays open when the server answers before reading it all.
            let bytes = try await BlockingIO.run { () -> [UInt8] in
                let descriptor = open(path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                defer { close(descriptor) }
                var buffer = [UInt8](repeating: 0, count: wanted)
                var done = 0
                while done < wanted {
                    let count = buffer.withUnsafeMutableBytes {
                        pread(descriptor, $0.baseAddress! + done, wanted - done, off_t(at) + off_t(done))
                    }
                    if count > 0 {
                        done += count
                    } else if count == 0 {
                        throw POSIXError(.EIO)
                    } else if errno != EINTR {
                        throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                    }
                }
                return buffer
            }
            offset += Int64(wanted)
            progress?(UInt64(wanted))
            return ByteBuffer(bytes: bytes)
        }
    }
}
