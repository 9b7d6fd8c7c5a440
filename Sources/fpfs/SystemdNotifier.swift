import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// systemd's readiness protocol (sd_notify(3)) without libsystemd: each message is one datagram
/// of `KEY=VALUE` lines sent to the unix socket named by `$NOTIFY_SOCKET` (a path, or `@name` for
/// an abstract socket). With no `$NOTIFY_SOCKET` (not under a `Type=notify` unit) it does nothing.
struct SystemdNotifier: Sendable {
    /// The socket's address; nil: not run by systemd.
    let socket: String?

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socket = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Sends `lines` as one message; a failure is only logged by the caller's choice (systemd may
    /// be gone, and the mount must not fail for it).
    @discardableResult
    func send(_ lines: String...) -> Bool {
        guard let socket else { return false }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socket.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // abstract: a leading NUL, no trailing one
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: path)
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + path.count + (path[0] == 0 ? 0 : 1))
        let message = Array(lines.joined(separator: "\n").utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), address, length) }
            }
        }
        return sent == message.count
    }

    /// Waits (on a thread of its own: it blocks) until `mountpoint` answers a stat, which the
    /// kernel passes to the daemon's request loop, then sends READY=1 with `status`.
    func sendReady(whenAnswering mountpoint: String, status: String) {
        guard socket != nil else { return }
        let notifier = self
        Thread {
            var buffer = stat()
            guard stat(mountpoint, &buffer) == 0 else { return }
            notifier.send("READY=1", "STATUS=\(status)")
        }.start()
    }
}
