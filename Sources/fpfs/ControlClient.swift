import CFuse
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Talks to a mount's daemon over its control socket, found from the mountpoint.
enum ControlClient {
    /// Sends `command` to the daemon serving `mountpoint` and returns its JSON answer, waiting
    /// for it at most `timeout` seconds.
    static func send(_ command: String, to mountpoint: String, timeout: Int = 30) throws -> Data {
        let path = try socketPath(of: mountpoint)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw CommandFailure("cannot create a socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            throw CommandFailure("the daemon of \(mountpoint) does not answer: \(String(cString: strerror(errno)))")
        }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let request = Array((command + "\n").utf8)
        guard write(fd, request, request.count) == request.count else {
            throw CommandFailure("cannot send to the daemon of \(mountpoint)")
        }
        var answer = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            answer.append(contentsOf: buffer.prefix(count))
        }
        return answer
    }

    /// The control socket's path, from the mount root's `user.fpfs.control` attribute; read within
    /// `timeout` seconds, since a daemon that hangs would hold the call for good.
    static func socketPath(of mountpoint: String, timeout: Int = BoundedCall.daemonSeconds) throws -> String {
        let value = BoundedCall.run(seconds: timeout) { () -> String? in
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = getxattr(mountpoint, "user.fpfs.control", &buffer, buffer.count)
            return count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : nil
        }
        guard let value else {
            throw CommandFailure("the daemon of \(mountpoint) does not answer (a request waited \(timeout) s)")
        }
        guard let value else { throw CommandFailure("\(mountpoint) is not an fpfs mount (or its daemon is gone)") }
        return value
    }
}
