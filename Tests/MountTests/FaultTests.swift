import Foundation
import Testing

extension MountTests {
    /// A provider that throws or hangs gives the reader the errno of ARCHITECTURE §6 within the bound,
    /// never a hung tool, and the daemon keeps serving the other files meanwhile and afterwards.
    @Suite("Provider faults reach readers as errno")
    struct FaultTests {
        static let faults =
            "hang:fetch:hang.bin;error=noSuchItem:fetch:gone.bin;error=notAuthenticated:fetch:denied.bin"

        @Test("cat of a hung, vanished or forbidden fetch fails with EHOSTDOWN, ENOENT, EACCES; others read")
        func faultsBecomeErrno() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let payload = String(repeating: "fpfs fault test\n", count: 4096)
            for name in ["hang.bin", "gone.bin", "denied.bin"] { try scratch.writeRemote(name, payload) }
            try scratch.writeRemote("ok.txt", "still served\n")
            try scratch.writeRemote("later.txt", "served after the faults\n")
            let mount = try await TestMount.start(
                remote: scratch.remote, in: scratch, options: ["--remote-timeout", "2", "--inject-faults", Self.faults])
            defer { mount.unmount() }

            // The hung fetch: cat must fail with EHOSTDOWN once --remote-timeout has passed, not hang.
            async let hung = Command(["cat", "--", mount.path("hang.bin")], timeout: .seconds(30)).run()
            try await Task.sleep(for: .milliseconds(300))
            // Meanwhile another file is served.
            let during = await Command(["cat", "--", mount.path("ok.txt")], timeout: .seconds(30)).run()
            #expect(during.succeeded && during.stdout == "still served\n", "while a fetch hangs: \(during)")
            let hang = await hung
            #expect(!hang.timedOut, "cat of a hung fetch never returned: \(hang)")
            #expect(hang.status != 0, "cat of a hung fetch succeeded")
            #expect(hang.stderr.contains("Host is down"), "expected EHOSTDOWN: \(hang)")
            #expect(hang.duration < .seconds(10), "EHOSTDOWN took \(hang.duration) with --remote-timeout 2")

            for (name, message) in [("gone.bin", "No such file or directory"), ("denied.bin", "Permission denied")] {
                let output = await Command(["cat", "--", mount.path(name)], timeout: .seconds(30)).run()
                #expect(!output.timedOut && output.status != 0, "cat \(name): \(output)")
                #expect(output.stderr.contains(message), "cat \(name) should fail with \(message): \(output)")
            }

            let later = await Command(["cat", "--", mount.path("later.txt")], timeout: .seconds(30)).run()
            #expect(later.succeeded && later.stdout == "served after the faults\n", "after the faults: \(later)")
            let listing = await Command(["ls", "-A", mount.mountpoint], timeout: .seconds(30)).run()
            #expect(listing.lines == ["denied.bin", "gone.bin", "hang.bin", "later.txt", "ok.txt"], "\(listing)")
            #expect(try await mount.status().fetches.failed >= 3, "fpfs status does not count the failed fetches")
        }

        @Test(
            "the log line of a failed fetch, a failed pin, a refused upload and a refused deletion names the file's path and the remote's answer"
        )
        func failureLogLines() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("docs/old/broken.bin", String(repeating: "x", count: 100_000))
            try scratch.writeRemote("docs/old/kept.txt", "kept\n")
            let faults = "error=cannotSynchronize:fetch:broken.bin;error=notAuthenticated:create:refused.txt"
            let mount = try await TestMount.start(
                remote: scratch.remote, in: scratch, options: ["--remote-timeout", "2", "--inject-faults", faults])
            defer { mount.unmount() }

            let read = await Command(["cat", "--", mount.path("docs/old/broken.bin")], timeout: .seconds(30)).run()
            #expect(!read.succeeded && read.stderr.contains("Input/output error"), "\(read)")
            let pin = try await FpfsBinary.command(["pin", mount.path("docs/old/broken.bin")], timeout: .seconds(30))
                .run()
            #expect(!pin.succeeded && pin.stderr.contains("docs/old/broken.bin"), "\(pin)")
            try "refused\n".write(toFile: mount.path("docs/old/refused.txt"), atomically: false, encoding: .utf8)
            // Each names the path in the mount, not a name alone nor the remote's identifier.
            let lines = try await Self.failureLines(
                in: scratch.cache,
                naming: [
                    ("docs/old/broken.bin", "cannot synchronize: injected fault"),
                    ("docs/old/refused.txt", "not authenticated: injected fault"),
                ])
            // The fetch's line, the read's EIO and the pin's EIO, and the upload's.
            #expect(lines.count >= 4, "\(lines)")

            // A refused deletion, in a mount of its own: the refused creation would hold it back
            // (a deletion keeps its place in the order); remounted, the creation goes through.
            mount.unmount()
            let again = try await TestMount.start(
                remote: scratch.remote, in: scratch,
                options: ["--remote-timeout", "2", "--inject-faults", "error=deletionRejected:delete:kept.txt"])
            defer { again.unmount() }
            try FileManager.default.removeItem(atPath: again.path("docs/old/kept.txt"))
            _ = try await Self.failureLines(in: scratch.cache, naming: [("docs/old/kept.txt", "deletion rejected")])
            // `fpfs status` names the waiting deletion by its path too.
            let status = try await FpfsBinary.command(["status", again.mountpoint]).check()
            #expect(status.stdout.contains("delete docs/old/kept.txt"), "\(status.stdout)")
        }

        /// The log's failure lines (of injected faults and refusals) once each of `expected` is
        /// there, within 10 s; records an issue for each missing and for a line naming none.
        private static func failureLines(in cacheDir: String, naming expected: [(path: String, answer: String)])
            async throws -> [Substring]
        {
            var lines: [Substring] = []
            for _ in 0..<100 {
                let log = (try? String(contentsOfFile: cacheDir + "/fpfs.log", encoding: .utf8)) ?? ""
                lines = log.split(separator: "\n").filter { $0.contains("injected fault") || $0.contains("rejected") }
                let found = expected.allSatisfy { path, answer in
                    lines.contains { $0.contains(path) && $0.contains(answer) }
                }
                if found { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            for (path, answer) in expected {
                #expect(lines.contains { $0.contains(path) && $0.contains(answer) }, "no line of \(path): \(lines)")
            }
            for line in lines {
                #expect(line.contains("docs/old/"), "names no path: \(line)")
            }
            return lines
        }
    }
}
