import Foundation
import TestServers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// What a user reads: messages that say what to do, the man page and install, and progress
    /// that fits an 80- or 60-column terminal (captured under a pty with script(1)).
    @Suite("Terminal output")
    struct TerminalOutputTests {
        @Test("a refused port and a WebDAV path that does not exist are named, with what to try")
        func remoteMessages() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let port = try WebDAVTestServer.freePort()
            let refused = try await TestMount.mountCommand(
                remote: "webdav://127.0.0.1:\(port)/dav", mountpoint: scratch.mountpoint, cacheDir: scratch.cache
            ).run()
            #expect(
                !refused.succeeded
                    && refused.stderr.contains("nothing listens on 127.0.0.1:\(port) — is the server running?"),
                "\(refused)")
            #expect(refused.stderr.split(separator: "\n").count == 1, "not one line: \(refused.stderr)")

            let server = try await FakeWebDAVServer.start(serving: scratch.remote, in: scratch)
            defer { server.stopBlocking() }
            let missing = try await TestMount.mountCommand(
                remote: server.url + "/x", mountpoint: scratch.mountpoint, cacheDir: scratch.cache + "2"
            ).run()
            #expect(
                !missing.succeeded
                    && missing.stderr.contains("the server has no collection /dav/x — check the URL's path"),
                "\(missing)")
            #expect(!MountTable.isMounted(scratch.mountpoint))
        }

        @Test(
            "the man page renders with man -l and has every subcommand, mount option and xattr; install.sh installs it all"
        )
        func manPageAndInstall() async throws {
            let page = FpfsBinary.packageRoot + "/docs/man/fpfs.1"
            var rendering = Command(["man", "-l", page])
            rendering.environment = ["MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"]
            let narrow = try await rendering.check()
            #expect(narrow.stdout.contains("FPFS(1)") && narrow.stderr.isEmpty, "\(narrow)")
            // Wide, so that no option is hyphenated across lines.
            rendering.environment["MANWIDTH"] = "400"
            let rendered = try await rendering.check()
            for word in ["mount", "unmount", "status", "pin", "unpin", "evict", "sync", "signal", "user.fpfs.state"] {
                #expect(rendered.stdout.contains(word), "the man page has no \(word)")
            }
            // Generated from the parser: every option of `fpfs mount --help` is in it.
            let help = try await FpfsBinary.command(["mount", "--help"]).check()
            let options = Set(help.stdout.matches(of: /--[a-z][a-z0-9-]+/).map { String($0.output) })
            #expect(options.count > 20)
            for option in options {
                #expect(
                    rendered.stdout.contains(option),
                    "the man page lacks \(option): regenerate it with scripts/generate-docs.sh")
            }

            let scratch = try Scratch()
            defer { scratch.remove() }
            let root = scratch.path + "/root"
            try await Command(
                [FpfsBinary.packageRoot + "/scripts/install.sh", "--binary", try FpfsBinary.path(), "--destdir", root],
                timeout: .seconds(120)
            ).check()
            for path in [
                "/usr/local/sbin/fpfs", "/usr/local/sbin/mount.fpfs", "/usr/local/sbin/mount.fuse.fpfs",
                "/sbin/mount.fpfs", "/sbin/mount.fuse.fpfs", "/usr/local/share/man/man1/fpfs.1",
                "/usr/local/share/bash-completion/completions/fpfs", "/usr/local/share/zsh/site-functions/_fpfs",
            ] {
                // The links in /sbin name the installed binary, which is not there under --destdir.
                let present =
                    FileManager.default.fileExists(atPath: root + path)
                    || (try? FileManager.default.destinationOfSymbolicLink(atPath: root + path))
                        == "/usr/local/sbin/fpfs"
                #expect(present, "install.sh did not install \(path)")
            }
            let fake = await Command([root + "/usr/local/sbin/mount.fpfs", "-f", "a", "b"]).run()
            #expect(fake.succeeded, "mount.fpfs -f (a fake mount) should do nothing: \(fake)")
            let completion = try await Command.bash(
                #"source "$1"; complete -p fpfs"#, root + "/usr/local/share/bash-completion/completions/fpfs"
            ).check()
            #expect(completion.stdout.contains("fpfs"))
        }

        @Test(
            "the pin bar and status --watch fit 80 and 60 columns, one line per file; Ctrl-C of pin says the pin stays")
        func progressFits() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let name = "a-file-with-a-rather-long-name-to-show-that-it-is-cut.bin"
            try Data(repeating: 7, count: 6 << 20).write(to: URL(fileURLWithPath: scratch.remote + "/" + name))
            let mount = try await TestMount.start(
                remote: "file://\(scratch.remote)?bandwidth=2MiB", in: scratch, options: ["--block-size", "64KiB"])
            defer { mount.unmount() }
            let binary = try FpfsBinary.path()

            for columns in [80, 60] {
                try await FpfsBinary.command(["unpin", mount.path(name)]).check()
                try await FpfsBinary.command(["evict", mount.path(name)]).check()
                let watch = Command.bash(
                    #"script -qec "stty cols $1 rows 60; timeout -s INT 3 '$2' status --watch '$3'" /dev/null; true"#,
                    String(columns), binary, mount.mountpoint, timeout: .seconds(30))
                async let watched = watch.run()
                let pin = try await Command.bash(
                    #"script -qec "stty cols $1 rows 60; '$2' pin '$3'" /dev/null"#, String(columns), binary,
                    mount.path(name), timeout: .seconds(60)
                ).check()
                let status = await watched
                for (what, output) in [("pin", pin.stdout), ("status --watch", status.stdout)] {
                    let lines = Self.screenLines(output)
                    #expect(lines.contains { $0.contains("%") }, "\(what) at \(columns): no bar in \(output)")
                    for line in lines {
                        #expect(line.count < columns, "\(what) at \(columns) columns: \(line.count): '\(line)'")
                    }
                }
                for report in status.stdout.components(separatedBy: "fpfs mount ").dropFirst() {
                    let files = Self.screenLines(report).filter { $0.contains("↓") }
                    #expect(files.count <= 1, "one line per file, not per request: \(files)")
                }
                #expect(status.stdout.contains("↓"), "--watch never showed the download: \(status.stdout)")
            }

            try await FpfsBinary.command(["unpin", mount.path(name)]).check()
            try await FpfsBinary.command(["evict", mount.path(name)]).check()
            let errors = scratch.path + "/pin.err"
            let pid = try ChildProcess.spawn(
                [binary, "pin", mount.path(name)], stdout: .file("/dev/null"), stderr: .file(errors))
            try await Task.sleep(for: .seconds(1))
            kill(pid, SIGINT)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            #expect((status >> 8) & 0xff == 130, "pin ended with \(status)")
            let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            #expect(said.contains("the pin stays and the daemon goes on downloading"), "\(said)")
            let pinned = try await Command(["getfattr", "-n", "user.fpfs.pinned", "--only-values", mount.path(name)])
                .check()
            #expect(pinned.stdout == "1")
            try await FpfsBinary.command(["unpin", mount.path(name)]).check()
        }

        @Test("pin --cancel (as unpin) starts no further file")
        func cancelStopsFurtherFiles() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try FileManager.default.createDirectory(atPath: scratch.remote + "/many", withIntermediateDirectories: true)
            for index in 0..<16 {
                try Data(repeating: 1, count: 512 << 10).write(
                    to: URL(fileURLWithPath: scratch.remote + "/many/f\(index).bin"))
            }
            let mount = try await TestMount.start(remote: "file://\(scratch.remote)?bandwidth=1MiB", in: scratch)
            defer { mount.unmount() }
            let binary = try FpfsBinary.path()
            let errors = scratch.path + "/pin.err"
            let pid = try ChildProcess.spawn(
                [binary, "pin", mount.path("many")], stdout: .file("/dev/null"), stderr: .file(errors))
            var reaped = false
            defer {
                if !reaped {
                    kill(pid, SIGKILL)
                    var status: Int32 = 0
                    waitpid(pid, &status, 0)
                }
            }
            try await Task.sleep(for: .seconds(1))
            try await FpfsBinary.command(["pin", "--cancel", mount.path("many")]).check()
            func localFiles() async throws -> Int {
                var count = 0
                for index in 0..<16 {
                    let state = try await Command([
                        "getfattr", "-n", "user.fpfs.state", "--only-values", mount.path("many/f\(index).bin"),
                    ]).check()
                    if state.stdout == "local" { count += 1 }
                }
                return count
            }
            // The files under way stop (or end, if nearly done); then nothing moves.
            try await Task.sleep(for: .seconds(4))
            let settled = try await localFiles()
            try await Task.sleep(for: .seconds(2))
            let later = try await localFiles()
            #expect(settled == later, "downloads went on after the cancel: \(settled) then \(later)")
            #expect(later < 16, "every file was downloaded despite the cancel")
            let pinned = try await Command(["getfattr", "-n", "user.fpfs.pinned", "--only-values", mount.path("many")])
                .check()
            #expect(pinned.stdout == "0")
            // The pin that was waiting says why it ends without everything local.
            var status: Int32 = 0
            reaped = waitpid(pid, &status, 0) == pid
            #expect(reaped && (status >> 8) & 0xff == 1)
            let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            #expect(said.contains("unpinned (fpfs unpin or pin --cancel) with"), "\(said)")
        }

        @Test("an unpin cancels the pin's fetches in flight; a cat of one of its files started before completes")
        func unpinCancelsFetchesInFlight() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try FileManager.default.createDirectory(atPath: scratch.remote + "/big", withIntermediateDirectories: true)
            let fileSize = 16 << 20
            for index in 0..<4 {
                let bytes = (0..<fileSize / 8).map { UInt64($0) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(index) }
                try bytes.withUnsafeBytes {
                    try Data($0).write(to: URL(fileURLWithPath: scratch.remote + "/big/f\(index).bin"))
                }
            }
            let mount = try await TestMount.start(remote: "file://\(scratch.remote)?bandwidth=4MiB", in: scratch)
            defer { mount.unmount() }
            let binary = try FpfsBinary.path()
            let pin = try ChildProcess.spawn(
                [binary, "pin", mount.path("big")], stdout: .file("/dev/null"), stderr: .file("/dev/null"))
            defer {
                kill(pin, SIGKILL)
                var status: Int32 = 0
                waitpid(pin, &status, 0)
            }
            try await Task.sleep(for: .seconds(1))
            let copy = scratch.path + "/f0.copy"
            async let cat = Command.bash(#"cat "$1" > "$2""#, mount.path("big/f0.bin"), copy, timeout: .seconds(60))
                .run()
            try await Task.sleep(for: .milliseconds(500))
            try await FpfsBinary.command(["unpin", mount.path("big")]).check()
            let catted = await cat
            #expect(catted.succeeded, "\(catted)")
            let same = await Command(["cmp", copy, scratch.remote + "/big/f0.bin"]).run()
            #expect(same.succeeded, "the cat started before the unpin read wrong bytes: \(same)")

            func received() async throws -> Int {
                let json = try await FpfsBinary.command(["status", mount.mountpoint, "--json"], timeout: .seconds(20))
                    .check()
                let fields = try JSONSerialization.jsonObject(with: json.stdoutData) as? [String: Any]
                let fetches = try #require(fields?["fetches"] as? [String: Any], "\(json.stdout)")
                return try #require(fetches["bytes"] as? Int, "\(json.stdout)")
            }
            try await Task.sleep(for: .milliseconds(500))
            let settled = try await received()
            try await Task.sleep(for: .seconds(2))
            let later = try await received()
            // Before: the four files under way went on at 4 MiB/s until all 64 MiB had come.
            #expect(later - settled < 1 << 20, "fetches went on after the unpin: \(settled) then \(later) bytes")
            #expect(later < 4 * fileSize - (8 << 20), "all was fetched despite the unpin: \(later) bytes")
        }

        /// What a terminal shows of `output`: split at newlines and carriage returns, escape
        /// sequences (erase line, clear screen) removed.
        static func screenLines(_ output: String) -> [String] {
            output.replacing(/\x{1B}\[[0-9;]*[A-Za-z]/, with: "")
                .split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }).map(String.init)
        }
    }
}
