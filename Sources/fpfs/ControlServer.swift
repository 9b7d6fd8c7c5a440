import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's control socket: a Unix socket on which each connection sends one command line and
/// gets one JSON answer. `fpfs status` finds it through the root's `user.fpfs.control` xattr.
/// It serves on a thread of its own, never on the cooperative pool.
final class ControlServer: Sendable {
    let path: String
    private let socketFD: Int32

    /// Binds the socket at `path` (replacing a stale one) and starts serving with `handler`,
    /// which maps a command to its JSON answer.
    init(path: String, handler: @escaping @Sendable (String) -> Data) throws {
        self.path = path
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw CommandFailure("cannot create the control socket: \(String(cString: strerror(errno)))")
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw CommandFailure("control socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw CommandFailure("cannot listen on the control socket \(path): \(message)")
        }
        chmod(path, 0o600)
        self.socketFD = fd
        let thread = Thread { Self.serve(fd, handler: handler) }
        thread.name = "fpfs-control"
        thread.start()
    }

    /// Stops serving and removes the socket file.
    func stop() {
        shutdown(socketFD, Int32(SHUT_RDWR))
        unlink(path)
    }

    private static func serve(_ fd: Int32, handler: @escaping @Sendable (String) -> Data) {
        while true {
            let connection = accept(fd, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            // A thread per connection: a command that waits (`signal`) must not hold up `status`.
            let thread = Thread { answer(connection, handler: handler) }
            thread.name = "fpfs-control-connection"
            thread.start()
        }
    }

    private static func answer(_ connection: Int32, handler: @Sendable (String) -> Data) {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while !request.contains(UInt8(ascii: "\n")), request.count < 65536 {
            let count = read(connection, &buffer, buffer.count)
            if count <= 0 { break }
            request += buffer.prefix(count)
        }
        let command = String(decoding: request, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let answer = handler(command)
        answer.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(connection, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
        close(connection)
    }
}
