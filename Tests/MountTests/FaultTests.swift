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
            "the log line of a refused upload, a failed fetch and a failed pin names the file and the remote's answer")
        func failureLogLines() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("broken.bin", String(repeating: "x", count: 100_000))
            let faults = "error=cannotSynchronize:fetch:broken.bin;error=notAuthenticated:create:refused.txt"
            let mount = try await TestMount.start(
                remote: scratch.remote, in: scratch, options: ["--remote-timeout", "2", "--inject-faults", faults])
            defer { mount.unmount() }

            let read = await Command(["cat", "--", mount.path("broken.bin")], timeout: .seconds(30)).run()
            #expect(!read.succeeded && read.stderr.contains("Input/output error"), "\(read)")
            let pin = try await FpfsBinary.command(["pin", mount.path("broken.bin")], timeout: .seconds(30)).run()
            #expect(!pin.succeeded && pin.stderr.contains("broken.bin"), "\(pin)")
            try "refused\n".write(toFile: mount.path("refused.txt"), atomically: false, encoding: .utf8)

            let expected = [
                ("broken.bin", "cannot synchronize: injected fault"),
                ("refused.txt", "not authenticated: injected fault"),
            ]
            var lines: [Substring] = []
            for _ in 0..<100 {
                let log = (try? String(contentsOfFile: mount.cacheDir + "/fpfs.log", encoding: .utf8)) ?? ""
                lines = log.split(separator: "\n").filter { $0.contains("injected fault") }
                if expected.allSatisfy({ name, answer in lines.contains { $0.contains(name) && $0.contains(answer) } })
                {
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            for (name, answer) in expected {
                #expect(lines.contains { $0.contains(name) && $0.contains(answer) }, "no line of \(name): \(lines)")
            }
            // The fetch's line, the read's EIO and the pin's EIO, and the upload's: each names its file.
            #expect(lines.count >= 4, "\(lines)")
            for line in lines {
                #expect(line.contains("broken.bin") || line.contains("refused.txt"), "names no file: \(line)")
            }
        }
    }
}
