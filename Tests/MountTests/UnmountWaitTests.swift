import Foundation
import Testing

extension MountTests {
    /// `fpfs unmount` waits, up to `--unmount-wait`, for changes to reach the remote, and says
    /// what stays queued and where (DECISIONS 201).
    @Suite("Unmount with changes waiting")
    struct UnmountWaitTests {
        @Test("fpfs unmount waits for a slow remote to have every change")
        func waitsForUploads() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let remote = "file://" + scratch.remote + "?delay=300ms"
            let mount = try await TestMount.start(remote: remote, in: scratch)
            defer { mount.unmount() }
            let names = (1...6).map { "f\($0).txt" }
            for name in names {
                try await Command.bash("echo \"$2\" > \"$1\"", mount.path(name), name).check()
            }
            let unmounted = try await FpfsBinary.command(["unmount", mount.mountpoint], timeout: .seconds(60)).run()
            #expect(unmounted.succeeded, "\(unmounted)")
            #expect(unmounted.stderr.contains("waiting for"), "no progress line: \(unmounted.stderr)")
            #expect(!MountTable.isMounted(mount.mountpoint))
            for name in names {
                let contents = try? String(contentsOfFile: scratch.remote + "/" + name, encoding: .utf8)
                #expect(
                    contents == name + "\n", "\(name) is not on the remote after fpfs unmount: \(contents ?? "absent")")
            }
        }

        @Test("fpfs unmount --unmount-wait 0 says what stays queued, and the next mount sends it")
        func saysWhatStaysQueued() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let options = ["--remote-timeout", "2", "--inject-faults", "error=serverUnreachable:create:kept.txt"]
            let mount = try await TestMount.start(remote: scratch.remote, in: scratch, options: options)
            defer { mount.unmount() }
            try await Command.bash("echo kept > \"$1\"", mount.path("kept.txt")).check()
            let unmounted = try await FpfsBinary.command(
                ["unmount", mount.mountpoint, "--unmount-wait", "0"], timeout: .seconds(30)
            ).run()
            #expect(unmounted.succeeded, "\(unmounted)")
            #expect(
                unmounted.stderr.contains("1 change") && unmounted.stderr.contains("stay queued")
                    && unmounted.stderr.contains(mount.cacheDir),
                "fpfs unmount does not say what stays queued and where: \(unmounted.stderr)")
            #expect(!FileManager.default.fileExists(atPath: scratch.remote + "/kept.txt"))

            let again = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { again.unmount() }
            try await again.sync(seconds: 30)
            let contents = try? String(contentsOfFile: scratch.remote + "/kept.txt", encoding: .utf8)
            #expect(contents == "kept\n")
        }

        @Test("after fusermount3 -u with a change waiting, the daemon's log says what stays queued and where")
        func kernelUnmountLogsQueue() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let options = ["--remote-timeout", "2", "--inject-faults", "error=serverUnreachable:create:kept.txt"]
            let mount = try await TestMount.start(remote: scratch.remote, in: scratch, options: options)
            defer { mount.unmount() }
            let daemon = try #require(mount.daemon, "no pid in \(mount.cacheDir)/daemon.pid")
            try await Command.bash("echo kept > \"$1\"", mount.path("kept.txt")).check()
            try await Command(["fusermount3", "-u", mount.mountpoint]).check()
            #expect(await daemon.waitForExit(timeout: .seconds(20)), "the daemon did not exit after fusermount3 -u")
            let log = mount.logTail(lines: 5)
            #expect(
                log.contains("1 change") && log.contains("did not reach the remote") && log.contains("stay queued")
                    && log.contains(mount.cacheDir),
                "the log does not say what stays queued: \(log)")
        }

        @Test("a bad --unmount-wait is refused before anything is unmounted")
        func badDurationRefused() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let mount = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { mount.unmount() }
            for bad in ["-1", "soon", "99999999"] {
                let refused = try await FpfsBinary.command(["unmount", mount.mountpoint, "--unmount-wait", bad]).run()
                #expect(!refused.succeeded && refused.stderr.contains("--unmount-wait"), "\(bad): \(refused)")
            }
            #expect(MountTable.isMounted(mount.mountpoint))
        }
    }
}
