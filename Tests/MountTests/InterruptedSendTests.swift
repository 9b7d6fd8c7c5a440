import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// Issue 51 item 6, second half, through the real mount: a kill -9 just after an upload's bytes
    /// reached the remote, before its answer came back, made an identical, spurious conflict copy
    /// of each such file at the next mount (DECISIONS 173; the in-process test is
    /// `InterruptedUploadTests`). `--inject-faults hang-after:…` lets the remote apply the change and
    /// loses its answer.
    @Suite("Sends interrupted after the bytes left")
    struct InterruptedSendTests {
        @Test("kill -9 after the remote took an edit and a creation, then a remount: no conflict copy", arguments: [
            WritableRemote.Kind.folder, .apache,
        ])
        func killAfterTheBytesLeft(_ kind: WritableRemote.Kind) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("edited.txt", "the first version\n")
            let remote = try await WritableRemote.start(kind, in: scratch)
            defer { remote.stop() }
            let faults = "hang-after:modify:edited.txt;hang-after:create:new.txt"
            let first = try await TestMount.start(
                remote: remote.argument, in: scratch, options: ["--inject-faults", faults, "--poll-interval", "0"])
            defer { first.unmount() }
            try await Command(["cat", first.path("edited.txt")]).check()
            try await Command.bash(
                "echo 'the second version, here' > \"$1\" && echo 'a new file' > \"$2\"", first.path("edited.txt"),
                first.path("new.txt")
            ).check()
            // Both changes are on the remote while their answers hang.
            var arrived = false
            for _ in 0..<200 where !arrived {
                let edited = try? String(contentsOfFile: remote.folder + "/edited.txt", encoding: .utf8)
                let new = try? String(contentsOfFile: remote.folder + "/new.txt", encoding: .utf8)
                arrived = edited == "the second version, here\n" && new == "a new file\n"
                if !arrived { try await Task.sleep(for: .milliseconds(100)) }
            }
            try #require(arrived, "the sends never reached the remote: \(first.logTail())")
            let daemon = try #require(first.daemon)
            daemon.send(SIGKILL)
            #expect(await daemon.waitForExit(timeout: .seconds(10)), "the daemon survived SIGKILL")
            first.unmount()

            let second = try await TestMount.start(remote: remote.argument, in: scratch, options: ["--poll-interval", "0"])
            defer { second.unmount() }
            try await second.sync()
            for folder in [second.mountpoint, remote.folder] {
                let names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
                #expect(names == ["edited.txt", "new.txt"], "\(folder) holds \(names): \(second.logTail())")
            }
            #expect(
                try String(contentsOfFile: second.path("edited.txt"), encoding: .utf8) == "the second version, here\n")
            #expect(try String(contentsOfFile: second.path("new.txt"), encoding: .utf8) == "a new file\n")
        }
    }
}
