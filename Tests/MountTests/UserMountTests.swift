import Foundation
import TestServers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// A user other than root mounts: libfuse cannot mount(2) for them and hands the mount to
    /// fusermount3, which is setuid root for that (DECISIONS 243).
    @Suite("A user's own mount through fusermount3")
    struct UserMountTests {
        @Test(
            "a user mounts through fusermount3, reads and writes, unmounts; allow_other without user_allow_other is refused saying what to add"
        )
        func userMount() async throws {
            if let reason = FusermountCheck.whyUsersCannotMount() { try Test.cancel("skipped: \(reason)") }
            let user = try TestUser()
            defer { user.remove() }
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("a.txt", "alpha\n")
            try FileManager.default.createDirectory(atPath: scratch.cache, withIntermediateDirectories: true)
            try TestUser.letEveryoneThrough(scratch.mountpoint)
            try await Command(["chown", "-R", user.name, scratch.remote, scratch.mountpoint, scratch.cache]).check()
            let namespace = try await FuseNamespace.make(in: scratch)
            // The daemon goes before its user, and with the namespace whatever it mounted.
            defer { namespace.end(daemonPidFile: scratch.cache + "/daemon.pid") }
            func run(_ arguments: [String]) -> Command { user.run(arguments, prefix: namespace.prefix) }

            let mounted = await run([
                try FpfsBinary.path(), "mount", scratch.remote, scratch.mountpoint, "--cache-dir", scratch.cache,
            ]).run()
            #expect(mounted.succeeded, "\(mounted)")
            let options = namespace.options(at: scratch.mountpoint)
            #expect(options.contains("user_id=\(user.uid)"), "not the user's mount: \(options)")

            let read = try await run(["cat", scratch.mountpoint + "/a.txt"]).check()
            #expect(read.stdout == "alpha\n")
            // Without allow_other not even root may enter it.
            let root = await Command(namespace.prefix + ["cat", scratch.mountpoint + "/a.txt"]).run()
            #expect(!root.succeeded && root.stderr.contains("Permission denied"), "\(root)")
            try await run(["sh", "-c", "echo beta > \"$1\"", "sh", scratch.mountpoint + "/b.txt"]).check()
            try await run([try FpfsBinary.path(), "sync", scratch.mountpoint]).check()
            #expect(try String(contentsOfFile: scratch.remote + "/b.txt", encoding: .utf8) == "beta\n")
            let daemon = try #require(DaemonProcess(pidFile: scratch.cache + "/daemon.pid"))
            try await run([try FpfsBinary.path(), "unmount", scratch.mountpoint]).check()
            #expect(namespace.options(at: scratch.mountpoint).isEmpty, "still mounted")
            #expect(await daemon.waitForExit(timeout: .seconds(30)), "the daemon outlived its unmount")

            // allow_other is fusermount3's to refuse a user without user_allow_other in
            // /etc/fuse.conf; fpfs refuses first and says what to add (the file is left alone).
            if !FusermountCheck.configurationAllowsOther() {
                let refused = await run([
                    try FpfsBinary.path(), "mount", scratch.remote, scratch.mountpoint, "--cache-dir", scratch.cache,
                    "--allow-other",
                ]).run()
                #expect(!refused.succeeded, "\(refused)")
                #expect(
                    refused.stderr.contains("/etc/fuse.conf") && refused.stderr.contains("user_allow_other"),
                    "\(refused)")
                #expect(namespace.options(at: scratch.mountpoint).isEmpty)
            }
        }

        @Test(
            "the user unit of docs/systemd/user runs as systemd would run it: READY=1 once the mount answers, the user reads, ExecStop unmounts, STOPPING=1"
        )
        func userService() async throws {
            if let reason = FusermountCheck.whyUsersCannotMount() { try Test.cancel("skipped: \(reason)") }
            let unit = try UnitFile(path: FpfsBinary.packageRoot + "/docs/systemd/user/fpfs@.service")
            #expect(unit.value("Type") == "notify" && unit.value("WantedBy") == "default.target")
            let user = try TestUser()
            defer { user.remove() }
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("a.txt", "alpha\n")
            let home = scratch.path + "/home"
            try FileManager.default.createDirectory(atPath: home + "/.config/fpfs", withIntermediateDirectories: true)
            let instance = try await Command(["systemd-escape", "-p", scratch.mountpoint]).check().stdout
                .trimmingCharacters(in: .newlines)
            let path = try await Command(["systemd-escape", "-u", "-p", instance]).check().stdout
                .trimmingCharacters(in: .newlines)
            #expect(path == scratch.mountpoint)
            let specifiers = UnitFile.Specifiers(instance: instance, path: path, home: home)
            let environmentFile = unit.expanding(unit.value("EnvironmentFile") ?? "", specifiers)
            #expect(environmentFile == home + "/.config/fpfs/\(instance).env")
            // No --cache-dir: the user's own ~/.cache/fpfs, as for a user who copies the README.
            try Data("FPFS_REMOTE=\(scratch.remote)\nFPFS_OPTIONS=--poll-interval 1m\n".utf8)
                .write(to: URL(fileURLWithPath: environmentFile))
            try TestUser.letEveryoneThrough(scratch.mountpoint)
            try await Command(["chown", "-R", user.name, scratch.remote, scratch.mountpoint, home]).check()
            let socket = try NotifySocket(path: scratch.path + "/notify")
            defer { socket.close() }
            chmod(socket.path, 0o777)
            let namespace = try await FuseNamespace.make(in: scratch)
            defer { namespace.end() }

            // systemd's expansion: specifiers, then $NAME words from the environment file, split at blanks.
            let variables = try UnitFile.environment(in: environmentFile)
            func command(_ key: String) throws -> [String] {
                let words = try unit.command(key, specifiers, variables: variables)
                return [try FpfsBinary.path()] + words.dropFirst()
            }
            let start = try command("ExecStart")
            #expect(start.contains(scratch.mountpoint) && start.contains("--foreground"), "\(start)")
            let pid = try ChildProcess.spawn(
                namespace.prefix + ["setpriv", "--reuid", user.name, "--regid", user.name, "--init-groups", "--"]
                    + start,
                stdout: .file(scratch.path + "/journal.log"), stderr: .stdout,
                environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": home, "NOTIFY_SOCKET": socket.path])
            let daemon = DaemonProcess(pid: pid)
            defer {
                daemon.send(SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
            }
            var messages: [String] = []
            while let message = socket.receive(timeout: .seconds(30)) {
                messages.append(message)
                if message.contains("READY=1") { break }
            }
            let journal = { (try? String(contentsOfFile: scratch.path + "/journal.log", encoding: .utf8)) ?? "" }
            #expect(messages.last?.contains("READY=1") == true, "\(messages); \(start): \(journal())")
            #expect(namespace.options(at: scratch.mountpoint).contains("user_id=\(user.uid)"))
            let read = try await user.run(["cat", scratch.mountpoint + "/a.txt"], prefix: namespace.prefix).check()
            #expect(read.stdout == "alpha\n")

            try await user.run(try command("ExecStop"), prefix: namespace.prefix).check()
            var stopping: [String] = []
            while let message = socket.receive(timeout: .seconds(30)) {
                stopping.append(message)
                if message.contains("STOPPING=1") { break }
            }
            #expect(stopping.last?.hasPrefix("STOPPING=1") == true, "\(stopping)")
            #expect(await daemon.waitForExit(timeout: .seconds(30)), "the service's process outlived ExecStop")
            #expect(namespace.options(at: scratch.mountpoint).isEmpty, "still mounted")
            #expect(journal().contains("unmounted"), "no log on stderr (the journal): \(journal())")
        }
    }
}

/// A systemd unit file read as systemd reads the few things the example units use: `Key=value`
/// lines, the specifiers `%i`, `%f` and `%h`, and `$NAME` words taken from an environment file.
struct UnitFile {
    private let lines: [(key: String, value: String)]

    init(path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        lines = text.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#"), !line.hasPrefix("["), let equals = line.firstIndex(of: "=") else { return nil }
            return (String(line[..<equals]), String(line[line.index(after: equals)...]))
        }
    }

    /// `%i` (the instance), `%f` (the instance unescaped as a path) and `%h` (the user's home).
    struct Specifiers {
        var instance: String
        var path: String
        var home: String
    }

    func value(_ key: String) -> String? { lines.first { $0.key == key }?.value }

    /// `text` with the specifiers replaced.
    func expanding(_ text: String, _ specifiers: Specifiers) -> String {
        text.replacingOccurrences(of: "%i", with: specifiers.instance)
            .replacingOccurrences(of: "%f", with: specifiers.path).replacingOccurrences(of: "%h", with: specifiers.home)
    }

    /// The words of the command line `key` (ExecStart, ExecStop) as systemd would run them.
    func command(_ key: String, _ specifiers: Specifiers, variables: [String: String]) throws -> [String] {
        guard let line = value(key) else { throw MountTestFailure("the unit has no \(key)") }
        return expanding(line, specifiers).split(separator: " ").flatMap { word -> [String] in
            guard word.hasPrefix("$") else { return [String(word)] }
            return (variables[String(word.dropFirst())] ?? "").split(separator: " ").map(String.init)
        }
    }

    /// The `NAME=value` lines of an environment file.
    static func environment(in path: String) throws -> [String: String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var variables: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            variables[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return variables
    }
}

/// What a user's mount needs of this machine, read without changing anything.
enum FusermountCheck {
    /// Why fusermount3 cannot mount for a user here, or nil when it can: it must exist, be owned by
    /// root with the setuid bit, on a filesystem that honours the bit, in a process that may gain
    /// privileges. Images that strip the bit (or mount nosuid) cannot run the test, and it must not
    /// put the bit back: that would change the machine for everyone.
    static func whyUsersCannotMount() -> String? {
        let candidates = ["/usr/bin/fusermount3", "/bin/fusermount3"]
        guard let path = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return "no fusermount3 in /usr/bin or /bin (the fuse3 package)"
        }
        var info = stat()
        guard stat(path, &info) == 0 else { return "cannot stat \(path)" }
        guard info.st_uid == 0, info.st_mode & S_ISUID != 0 else {
            let mode = String(info.st_mode & 0o7777, radix: 8)
            return "\(path) is not setuid root (mode \(mode)): this image strips the bit"
        }
        var volume = statvfs()
        if statvfs(path, &volume) == 0, volume.f_flag & UInt(ST_NOSUID) != 0 {
            return "\(path) lies on a filesystem mounted nosuid"
        }
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        if status.split(separator: "\n").contains(where: { $0.hasPrefix("NoNewPrivs:") && $0.hasSuffix("1") }) {
            return "the tests run with no_new_privs, which disables setuid"
        }
        return nil
    }

    /// Whether /etc/fuse.conf has the line `user_allow_other`.
    static func configurationAllowsOther() -> Bool {
        let text = (try? String(contentsOfFile: "/etc/fuse.conf", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == "user_allow_other" }
    }

}

/// Where a user's mount is made: this machine's mount namespace when any user may open /dev/fuse,
/// else a private one in which /dev/fuse is a node any user may open (libfuse opens the device
/// itself before it hands the mount to fusermount3, so a /dev/fuse of mode 0600 allows no user
/// mounts; this image has one). Nothing outside changes: the node lies in the scratch folder (in
/// a folder only root may enter), and the bind mount over /dev/fuse and every mount made inside
/// go when the namespace's last process does (`end`).
final class FuseNamespace: Sendable {
    /// Why no namespace could be made: the test is skipped, not failed.
    struct Unavailable: Error { var reason: String }

    /// The process that holds the private namespace, or nil for this machine's.
    private let holder: pid_t?

    init(in scratch: Scratch) async throws {
        var info = stat()
        guard stat("/dev/fuse", &info) == 0 else { throw MountTestFailure("no /dev/fuse") }
        guard info.st_mode & 0o006 != 0o006 else {
            holder = nil
            return
        }
        let folder = scratch.path + "/dev"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        chmod(folder, 0o700)
        try await Command(["mknod", "-m", "0666", folder + "/fuse", "c", "10", "229"]).check()
        let pid = try ChildProcess.spawn(
            [
                "unshare", "--mount", "--propagation", "private", "sh", "-c",
                "mount --bind \"$1\" /dev/fuse && exec sleep 600", "sh", folder + "/fuse",
            ], stdout: .file(scratch.path + "/namespace.log"), stderr: .stdout)
        holder = pid
        for _ in 0..<100 {
            let mounts = (try? String(contentsOfFile: "/proc/\(pid)/mounts", encoding: .utf8)) ?? ""
            if mounts.contains(" /dev/fuse ") { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        end()
        throw Unavailable(reason: "/dev/fuse is root's only and no private mount namespace could be made")
    }

    /// A namespace for `scratch`, or the test cancelled with the reason there can be none.
    static func make(in scratch: Scratch) async throws -> FuseNamespace {
        do { return try await FuseNamespace(in: scratch) } catch let error as Unavailable {
            try Test.cancel("skipped: \(error.reason)")
        }
    }

    /// What runs a command in the namespace.
    var prefix: [String] { holder.map { ["nsenter", "-t", String($0), "-m", "--"] } ?? [] }

    /// The mount options the namespace shows for `mountpoint` (none when nothing is mounted there).
    func options(at mountpoint: String) -> [Substring] {
        let table = holder.map { "/proc/\($0)/mounts" } ?? "/proc/mounts"
        let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").map { $0.split(separator: " ") }.first {
            $0.count > 3 && $0[1] == Substring(mountpoint)
        }
        return line.map { $0[3].split(separator: ",") } ?? []
    }

    /// Stops the daemon of `daemonPidFile` if it still runs, then the namespace, which takes its
    /// mounts with it (in this machine's, `Scratch.remove` unmounts what is left).
    func end(daemonPidFile: String? = nil) {
        if let daemonPidFile, let daemon = DaemonProcess(pidFile: daemonPidFile) {
            daemon.send(SIGKILL)
            _ = daemon.waitForExitBlocking(timeout: .seconds(10))
        }
        guard let holder else { return }
        kill(holder, SIGKILL)
        var status: Int32 = 0
        waitpid(holder, &status, 0)
    }
}
