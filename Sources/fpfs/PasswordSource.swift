import Foundation
import WebDAVProvider

#if canImport(Glibc)
    import Glibc
#endif

/// Where a remote's password comes from: `FPFS_PASSWORD`, else the netrc file (`$NETRC` or
/// `~/.netrc`) — never the command line, where every user of the machine could read it in the
/// process list.
///
/// Nor the daemon's environment, which `/proc/PID/environ` shows for the mount's whole life:
/// `fpfs mount` takes `FPFS_PASSWORD` out of its own environment before it starts the daemon
/// (overwriting its bytes, which the kernel shows from the process's memory), and hands the
/// password over through a pipe the daemon reads once at start (`--password-fd`).
enum PasswordSource {
    static let variable = "FPFS_PASSWORD"

    /// The password this process was given: read to its end from `descriptor` (then closed) when
    /// there is one, else `FPFS_PASSWORD`, which is removed from the environment and its bytes
    /// overwritten. Call once, before any thread could read the environment.
    static func take(fromDescriptor descriptor: Int32?) -> String? {
        if let descriptor {
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count > 0 {
                    bytes += buffer.prefix(count)
                } else if count == 0 || errno != EINTR {
                    break
                }
            }
            close(descriptor)
            return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        }
        let prefix = variable + "="
        let length = prefix.utf8.count
        var password: String?
        var index = 0
        while let entry = environ[index] {
            index += 1
            guard strncmp(entry, prefix, length) == 0 else { continue }
            password = String(cString: entry + length)
            memset(entry + length, 0, strlen(entry + length))
        }
        unsetenv(variable)
        return password
    }

    /// Hands `password` to a daemon about to be spawned: the read end of a pipe that holds it, for
    /// the daemon's `--password-fd`, and closes the write end. Nil without a password.
    static func pipe(holding password: String?) throws -> Int32? {
        guard let password else { return nil }
        var ends: [Int32] = [0, 0]
        guard Glibc.pipe(&ends) == 0 else { throw CommandFailure("cannot create a pipe: \(errno)") }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        defer { close(ends[1]) }
        // A pipe holds 64 KiB before a write waits for its reader, which has not started yet.
        let bytes = Array(password.utf8)
        guard bytes.count < 60_000, write(ends[1], bytes, bytes.count) == bytes.count else {
            close(ends[0])
            throw CommandFailure("cannot hand the password to the daemon")
        }
        return ends[0]
    }

    /// The credentials for `host`: with `user` given, that user and `password` (or the netrc
    /// file's); without, a netrc entry's login and password when there is one, else none.
    static func credentials(
        user: String?, password: String?, host: String, environment: [String: String]
    ) throws -> WebDAVCredentials? {
        let entry = try netrcEntry(host: host, environment: environment)
        if let user {
            if let password { return WebDAVCredentials(user: user, password: password) }
            if let entry, entry.login == nil || entry.login == user, let password = entry.password {
                return WebDAVCredentials(user: user, password: password)
            }
            throw CommandFailure(
                "no password for '\(user)': set FPFS_PASSWORD or add 'machine \(host) login \(user) password …' to ~/.netrc"
            )
        }
        if let entry, let login = entry.login, let password = entry.password {
            return WebDAVCredentials(user: login, password: password)
        }
        if password != nil {
            throw CommandFailure("FPFS_PASSWORD is set but no user is given: add --user NAME")
        }
        return nil
    }

    /// The `machine HOST` entry of the netrc file (or its `default`), if the file exists.
    private static func netrcEntry(host: String, environment: [String: String]) throws -> (
        login: String?, password: String?
    )? {
        let path = environment["NETRC"] ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.netrc"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let words = text.split(whereSeparator: \.isWhitespace).map(String.init)
        var entries: [(machine: String?, login: String?, password: String?)] = []
        var index = 0
        while index < words.count {
            let word = words[index]
            let value = index + 1 < words.count ? words[index + 1] : nil
            switch word {
            case "machine":
                entries.append((value, nil, nil))
                index += 2
            case "default":
                entries.append((nil, nil, nil))
                index += 1
            case "login" where !entries.isEmpty:
                entries[entries.count - 1].login = value
                index += 2
            case "password" where !entries.isEmpty:
                entries[entries.count - 1].password = value
                index += 2
            case "account":
                index += 2
            case "macdef":
                // A macro runs to the next blank line, which splitting on white space cannot see;
                // fpfs needs none, so stop reading here.
                index = words.count
            default:
                index += 1
            }
        }
        let match =
            entries.first { $0.machine?.lowercased() == host.lowercased() } ?? entries.first { $0.machine == nil }
        return match.map { ($0.login, $0.password) }
    }
}
