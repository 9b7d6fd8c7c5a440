import Foundation
import TestServers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// `fpfs mount --foreground` under systemd (`Type=notify`): READY=1 once the mount answers,
    /// STATUS= lines, STOPPING=1 at the unmount, through a `NOTIFY_SOCKET` of the test's own.
    @Suite("systemd notify")
    struct SystemdNotifyTests {
        @Test("READY=1 after the mount answers, STATUS= lines, STOPPING=1 at unmount, in that order; logs on stderr")
        func notifyOrder() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("a.txt", "alpha\n")
            let socket = try NotifySocket(path: scratch.path + "/notify")
            defer { socket.close() }
            var environment = ProcessInfo.processInfo.environment
            environment["NOTIFY_SOCKET"] = socket.path
            let log = scratch.path + "/stderr.log"
            let pid = try ChildProcess.spawn(
                [
                    try FpfsBinary.path(), "mount", scratch.remote, scratch.mountpoint, "--foreground", "--cache-dir",
                    scratch.cache,
                ],
                stdout: .file(log), stderr: .stdout, environment: environment)
            let daemon = DaemonProcess(pid: pid)
            defer {
                _ = Command(["fusermount3", "-u", "-z", scratch.mountpoint]).runBlocking()
                daemon.send(SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
            }
            var messages: [String] = []
            var answeredAtReady = false
            while let message = socket.receive(timeout: .seconds(30)) {
                messages.append(message)
                if message.contains("READY=1") {
                    answeredAtReady =
                        MountTable.entries(at: scratch.mountpoint).first?.type == "fuse.fpfs"
                        && FileManager.default.fileExists(atPath: scratch.mountpoint + "/a.txt")
                    break
                }
            }
            #expect(answeredAtReady, "READY=1 came before the mount answered, or never: \(messages)")
            #expect(messages.first?.hasPrefix("STATUS=mounting") == true, "\(messages)")
            #expect(messages.last?.contains("STATUS=serving \(scratch.remote) on \(scratch.mountpoint)") == true)

            try await Command(["fusermount3", "-u", scratch.mountpoint]).check()
            var stopping: [String] = []
            while let message = socket.receive(timeout: .seconds(30)) {
                stopping.append(message)
                if message.contains("STOPPING=1") { break }
            }
            #expect(stopping.last?.hasPrefix("STOPPING=1") == true, "\(stopping)")
            #expect(await daemon.waitForExit(timeout: .seconds(30)))
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(text.contains("mounted") && text.contains("unmounted"), "no log on stderr: \(text)")
        }
    }
}

/// A unix datagram socket bound to a path, as systemd's notify socket is.
final class NotifySocket: Sendable {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw MountTestFailure("cannot make a socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw MountTestFailure("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw MountTestFailure("cannot bind \(path): errno \(errno)") }
    }

    /// The next datagram, or nil after `timeout` without one.
    func receive(timeout: Duration) -> String? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout.components.seconds * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : nil
    }

    func close() {
        Glibc.close(fd)
        unlink(path)
    }
}
