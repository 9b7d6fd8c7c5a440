import Foundation
import Testing

extension MountTests {
    /// `fpfs status` for a person and for scripts: every mount without a mountpoint, `--watch`
    /// with rates, the remote's changes, what was sent, and the latest problems.
    @Suite("Status")
    struct StatusTests {
        @Test("status without a mountpoint lists the mount; --watch repeats with rates; --json has the new sections")
        func statusForPeopleAndScripts() async throws {
            try await WriteMountTests.withMount(
                .folder, files: ["a.txt": "alpha\n"], options: ["--poll-interval", "0"]
            ) {
                remote, mount in
                _ = try String(contentsOfFile: mount.path("a.txt"), encoding: .utf8)
                try Data("written\n".utf8).write(to: URL(fileURLWithPath: mount.path("b.txt")))
                try await mount.sync()

                let all = try await FpfsBinary.command(["status"], timeout: .seconds(20)).check()
                #expect(all.stdout.contains("fpfs mount \(mount.mountpoint)"))
                #expect(all.stdout.contains("1 sent"), "\(all.stdout)")

                let watch = try await Command.bash(
                    #"timeout -s INT 2.5 "$1" status --watch "$2"; test $? = 124 || test $? = 130"#,
                    try FpfsBinary.path(), mount.mountpoint
                ).check()
                let reports = watch.lines.filter { $0.hasPrefix("fpfs mount ") }
                #expect(reports.count >= 2, "\(watch.stdout)")
                #expect(watch.stdout.contains("now 0 B/s"), "no rates: \(watch.stdout)")

                let json = try await FpfsBinary.command(["status", mount.mountpoint, "--json"], timeout: .seconds(20))
                    .check()
                let fields = try #require(
                    try JSONSerialization.jsonObject(with: json.stdoutData) as? [String: Any])
                for key in ["replication", "sent", "errors", "uploads", "downloads"] {
                    #expect(fields[key] != nil, "no \(key) in \(json.stdout)")
                }
                let bad = try await FpfsBinary.command(["status", "/"], timeout: .seconds(20)).run()
                #expect(!bad.succeeded)
                #expect(bad.stderr.contains("not an fpfs mount"))
            }
        }
    }
}
