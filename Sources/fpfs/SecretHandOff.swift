import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The secrets a mount may be given in its environment — the WebDAV password (`FPFS_PASSWORD`) and
/// the S3 secret key and session token — kept out of the daemon's environment, which
/// `/proc/PID/environ` shows for the mount's whole life (DECISIONS 186, 250).
///
/// `fpfs mount` takes them out of its own environment before it starts the daemon (unset, and
/// their bytes overwritten, since the kernel shows the process's initial environment from its
/// memory, which `unsetenv` leaves), and hands them over through a pipe the daemon reads once at
/// start (`--secrets-fd`).
enum SecretHandOff {
    /// The variables taken; others (the access key id, the profile, the region) are no secrets.
    static let variables = [PasswordSource.variable, "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]

    /// The secrets this process was given, by variable: read to its end from `descriptor` (then
    /// closed) when there is one, else `variables` taken out of the environment. Call once,
    /// before any thread could read the environment.
    static func take(fromDescriptor descriptor: Int32?) -> [String: String] {
        guard let descriptor else { return takeFromEnvironment() }
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
        var secrets: [String: String] = [:]
        // NAME=VALUE entries, each ended by a NUL, which no environment value holds.
        for entry in bytes.split(separator: 0) {
            guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else { continue }
            secrets[String(decoding: entry[..<equals], as: UTF8.self)] = String(
                decoding: entry[(equals + 1)...], as: UTF8.self)
        }
        return secrets
    }

    /// `variables` removed from the environment, their bytes overwritten first.
    private static func takeFromEnvironment() -> [String: String] {
        var secrets: [String: String] = [:]
        for variable in variables {
            let prefix = variable + "="
            let length = prefix.utf8.count
            var index = 0
            while let entry = environ[index] {
                index += 1
                guard strncmp(entry, prefix, length) == 0 else { continue }
                secrets[variable] = String(cString: entry + length)
                memset(entry + length, 0, strlen(entry + length))
            }
            unsetenv(variable)
        }
        return secrets
    }

    /// Hands `secrets` to a daemon about to be spawned: the read end of a pipe that holds them,
    /// for the daemon's `--secrets-fd`, and closes the write end. Nil without secrets.
    static func pipe(holding secrets: [String: String]) throws -> Int32? {
        guard !secrets.isEmpty else { return nil }
        var ends: [Int32] = [0, 0]
        guard Glibc.pipe(&ends) == 0 else { throw CommandFailure("cannot create a pipe: \(errno)") }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        defer { close(ends[1]) }
        var bytes: [UInt8] = []
        for (name, value) in secrets.sorted(by: { $0.key < $1.key }) { bytes += Array("\(name)=\(value)".utf8) + [0] }
        // A pipe holds 64 KiB before a write waits for its reader, which has not started yet.
        guard bytes.count < 60_000, write(ends[1], bytes, bytes.count) == bytes.count else {
            close(ends[0])
            throw CommandFailure("cannot hand the secrets to the daemon")
        }
        return ends[0]
    }
}
