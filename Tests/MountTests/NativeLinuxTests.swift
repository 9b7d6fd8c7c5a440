import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// fpfs as a Linux tool (issue 53): `--version`, logging, units, the mount(8) helper and fstab,
    /// allow_other, systemd's notify protocol, the man page, messages, and output that fits.
    @Suite("Native on Linux")
    struct NativeLinuxTests {
        @Test("--version and -V print the version and the commit; the help says where the log is")
        func versionAndHelp() async throws {
            for flag in ["--version", "-V"] {
                let output = try await FpfsBinary.command([flag]).check()
                let line = output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(
                    line.wholeMatch(of: /fpfs \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)/) != nil,
                    "\(flag): \(line)")
                let git = await Command(["git", "-C", FpfsBinary.packageRoot, "rev-parse", "--short=12", "HEAD"]).run()
                if git.succeeded {
                    #expect(line.contains("commit " + git.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
                }
            }
            let help = try await FpfsBinary.command(["--help"]).check()
            #expect(
                help.stdout.contains("fpfs.log") && help.stdout.contains("leaves a daemon running"), "\(help.stdout)")
            #expect(help.stdout.contains("user.fpfs.state"))
            // Where the log is and how it turns over, as SEMANTICS says (the help wraps its lines).
            let words = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            for said in [
                "$XDG_CACHE_HOME/fpfs/NAME-DIGEST/fpfs.log", "~/.cache/fpfs/NAME-DIGEST/fpfs.log",
                "with --foreground and no --log-file, to stderr", "kept under 10 MiB", "moves to FILE.1",
            ] {
                #expect(words.contains(said), "the help does not say '\(said)': \(words)")
            }
            let mountHelp = try await FpfsBinary.command(["mount", "--help"]).check()
            for option in ["--log-level", "--log-file", "-v", "--allow-other", "--default-permissions", "--umask"] {
                #expect(mountHelp.stdout.contains(option), "no \(option) in mount --help")
            }
            // No roadmap words: every scheme offered is one that works.
            for text in [help.stdout, mountHelp.stdout] {
                for word in ["not supported", "planned", "not yet", "coming"] {
                    #expect(!text.lowercased().contains(word), "help says '\(word)'")
                }
            }
            #expect(mountHelp.stdout.contains("s3://"))
        }

        @Test("durations and sizes take units: 1m, 500ms, 2h; 10G and 10GiB binary, 10GB decimal")
        func units() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("a.txt", "a\n")
            for (size, bytes) in [
                ("10G", 10 << 30), ("10GB", 10_000_000_000), ("10gib", 10 << 30), ("512m", 512 << 20),
            ] {
                let mount = try await TestMount.start(
                    remote: scratch.remote, in: scratch,
                    options: ["--cache-size", size, "--poll-interval", "1m", "--remote-timeout", "2m"])
                defer { mount.unmount() }
                let status = try await NativeStatus.of(mount.mountpoint)
                #expect(status.cache.bound == bytes, "\(size)")
                #expect(status.settings.pollInterval == 60)
                mount.unmount()
            }
            let mount = try await TestMount.start(
                remote: scratch.remote, in: scratch, options: ["--poll-interval", "500ms"])
            defer { mount.unmount() }
            #expect(try await NativeStatus.of(mount.mountpoint).settings.pollInterval == 0.5)
            mount.unmount()

            let refusals: [([String], String)] = [
                (["--poll-interval", "2d"], "--poll-interval must be a duration from 0s to 86400s"),
                (["--poll-interval", "25h"], "--poll-interval must be a duration"),
                (["--poll-interval", "-1m"], "--poll-interval must be zero or positive"),
                (["--remote-timeout", "500ms"], "--remote-timeout must be a duration from 1s to 3600s"),
                (["--cache-size", "10XB"], "--cache-size must be a size"),
                (["--cache-size", "20EB"], "--cache-size must be a size"),
            ]
            for (options, message) in refusals {
                let output = try await TestMount.mountCommand(
                    remote: scratch.remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache, options: options
                ).run()
                #expect(!output.succeeded && output.stderr.contains(message), "\(options): \(output)")
                #expect(!MountTable.isMounted(scratch.mountpoint))
            }
            let pin = try await FpfsBinary.command(["pin", "--timeout", "0s", scratch.mountpoint]).run()
            #expect(!pin.succeeded && pin.stderr.contains("--timeout must be"), "\(pin)")
        }

        @Test("--log-file and --log-level: the daemon logs there at that level; a full log moves to .1")
        func logFile() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("a.txt", "a\n")
            let log = scratch.path + "/my.log"
            // Past the cap already: the first line written moves it aside.
            try Data(repeating: UInt8(ascii: "x"), count: 10 << 20 + 1).write(to: URL(fileURLWithPath: log))
            let mount = try await TestMount.start(
                remote: scratch.remote, in: scratch, options: ["--log-file", log, "-v"])
            defer { mount.unmount() }
            _ = try String(contentsOfFile: mount.path("a.txt"), encoding: .utf8)
            mount.unmount()
            let text = try String(contentsOfFile: log, encoding: .utf8)
            #expect(text.contains("mounting \(scratch.remote)") && text.contains("(commit "), "\(text.prefix(2000))")
            #expect(text.contains("debug"), "no debug line at -v: \(text.prefix(2000))")
            let old = try FileManager.default.attributesOfItem(atPath: log + ".1")[.size] as? Int
            #expect(old == 10 << 20 + 1)
            #expect(!FileManager.default.fileExists(atPath: scratch.cache + "/fpfs.log"))
            let nowhere = try await TestMount.mountCommand(
                remote: scratch.remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache,
                options: ["--log-file", scratch.path + "/no/such/folder/fpfs.log"]
            ).run()
            #expect(!nowhere.succeeded && nowhere.stderr.contains("cannot open the log file"), "\(nowhere)")
            #expect(!MountTable.isMounted(scratch.mountpoint))
        }
    }
}

/// The parts of `fpfs status --json` these tests read.
struct NativeStatus: Decodable {
    struct Cache: Decodable { var bound: Int? }
    struct Access: Decodable {
        var allowOther: Bool
        var defaultPermissions: Bool
        var uid: UInt32
        var gid: UInt32
        var umask: UInt16
        var mountFlags: [String]
    }
    struct Settings: Decodable {
        var readOnly: Bool
        var pollInterval: Double
        var access: Access
    }
    var remote: String
    var cache: Cache
    var settings: Settings

    static func of(_ mountpoint: String) async throws -> NativeStatus {
        let output = try await FpfsBinary.command(["status", mountpoint, "--json"], timeout: .seconds(20)).check()
        return try JSONDecoder().decode(NativeStatus.self, from: output.stdoutData)
    }
}
