import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// The daemon ends cleanly on SIGTERM, and a mount left stale by kill -9 is recovered by the
    /// next `fpfs mount` without help.
    @Suite("The daemon's life and death")
    struct DaemonLifecycleTests {
        /// A small remote with a file and a folder, in the scratch directory.
        static func makeRemote(_ scratch: Scratch) throws {
            try scratch.writeRemote("a.txt", "alpha\n")
            try scratch.writeRemote("sub/b.txt", "beta\n")
        }

        @Test("SIGTERM to the daemon unmounts cleanly and the daemon exits")
        func sigtermUnmounts() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try Self.makeRemote(scratch)
            let mount = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { mount.unmount() }
            try await Command(["cat", "--", mount.path("sub/b.txt")]).check()
            let daemon = try #require(mount.daemon, "no pid in \(mount.cacheDir)/daemon.pid")
            #expect(try await mount.status().pid == daemon.pid, "fpfs status and daemon.pid disagree")

            daemon.send(SIGTERM)
            #expect(await daemon.waitForExit(timeout: .seconds(15)), "the daemon still runs 15 s after SIGTERM")
            #expect(await Self.waitUntilUnmounted(mount.mountpoint), "still in /proc/mounts after SIGTERM")
        }

        @Test("the daemon keeps none of the descriptors fpfs mount was started with")
        func daemonClosesInheritedDescriptors() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try Self.makeRemote(scratch)
            let held = scratch.path + "/held-open"
            try Data("held\n".utf8).write(to: URL(fileURLWithPath: held))
            // bash opens the file as descriptor 7 without close-on-exec, and fpfs mount inherits it.
            let command = try TestMount.mountCommand(
                remote: scratch.remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache)
            let mounted = await Command(
                ["bash", "-c", "exec 7<\"$1\"; shift; exec \"$@\"", "bash", held] + command.arguments
            ).run()
            let mount = TestMount(remote: scratch.remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache)
            defer { mount.unmount() }
            try #require(mounted.succeeded, "fpfs mount failed: \(mounted)")
            let daemon = try #require(mount.daemon, "no pid in \(mount.cacheDir)/daemon.pid")
            let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/fd")
            let targets = descriptors.compactMap {
                try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(daemon.pid)/fd/\($0)")
            }
            #expect(!targets.contains(held), "the daemon holds \(held) open: \(targets)")
        }

        @Test("after kill -9 of the daemon, fpfs mount on the same mountpoint recovers and works")
        func recoversAfterKill9() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try Self.makeRemote(scratch)
            let first = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { first.unmount() }
            try await Command(["cat", "--", first.path("a.txt")]).check()
            let daemon = try #require(first.daemon, "no pid in \(first.cacheDir)/daemon.pid")

            daemon.send(SIGKILL)
            #expect(await daemon.waitForExit(timeout: .seconds(10)), "the daemon survived SIGKILL")
            // The kernel keeps the dead mount: access now fails with ENOTCONN until someone cleans up.
            let stale = await Command(["ls", first.mountpoint], timeout: .seconds(20)).run()
            #expect(!stale.succeeded, "ls of a mount whose daemon was killed succeeded: \(stale)")

            let second = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { second.unmount() }
            let listing = try await Command(["ls", "-A", second.mountpoint], timeout: .seconds(20)).check()
            #expect(listing.lines == ["a.txt", "sub"])
            let read = try await Command(["cat", "--", second.path("sub/b.txt")]).check()
            #expect(read.stdout == "beta\n")
            #expect(
                MountTable.entries(at: second.mountpoint).count == 1,
                "the stale mount was stacked on, not replaced: \(MountTable.entries(at: second.mountpoint))")
        }

        @Test(
            "status shows a download in flight; kill -9 of the daemon in the middle of it, then remount: the file reads back correct"
        )
        func killDuringFetchServesNoUnfetchedBytes() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try PatternFile.write(to: scratch.remote + "/large.bin", size: 6 << 20, seed: 9)
            let remote = "file://\(scratch.remote)?bandwidth=2MiB"
            let first = try await TestMount.start(
                remote: remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache)
            defer { first.unmount() }
            let daemon = try #require(first.daemon, "no pid in \(first.cacheDir)/daemon.pid")

            // Half-way through a 3 s download, the daemon dies; the reader fails (ENOTCONN).
            let reader = Task { await Command(["cat", "--", first.path("large.bin")], timeout: .seconds(60)).run() }
            try await Task.sleep(for: .milliseconds(1500))
            // Meanwhile `fpfs status` shows a person the download with a progress bar.
            let status = try await FpfsBinary.command(["status", first.mountpoint], timeout: .seconds(20)).check()
            #expect(
                status.lines.contains { $0.contains("large.bin") && $0.contains("[#") && $0.contains("%") },
                "no progress bar for the download in flight: \(status.stdout)")
            daemon.send(SIGKILL)
            #expect(await daemon.waitForExit(timeout: .seconds(10)), "the daemon survived SIGKILL")
            #expect(await !reader.value.succeeded, "cat finished before the daemon was killed; the test proves nothing")

            let second = try await TestMount.start(
                remote: remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache)
            defer { second.unmount() }
            let read = try await Command.bash("sha256sum < \"$1\"", second.path("large.bin"), timeout: .seconds(60))
                .check()
            let expected = try await Command.bash("sha256sum < \"$1\"", scratch.remote + "/large.bin").check()
            #expect(read.stdout == expected.stdout, "after kill -9 and remount the file reads other bytes")
        }

        @Test(
            "a stopped daemon: fpfs status and mount say it does not answer, fpfs unmount unmounts it, and what it journalled reaches the remote from the next mount"
        )
        func aStoppedDaemonIsReportedAndUnmounted() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try Self.makeRemote(scratch)
            let first = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { first.unmount() }
            let daemon = try #require(first.daemon, "no pid in \(first.cacheDir)/daemon.pid")
            try await Command.bash("echo written > \"$1\"", first.path("new.txt")).check()
            daemon.send(SIGSTOP)
            defer { daemon.send(SIGCONT) }

            // Each command gives up after its 10 s bound; the tests' deadline is well beyond it.
            let status = try await FpfsBinary.command(["status", first.mountpoint], timeout: .seconds(40)).run()
            #expect(!status.timedOut && status.status != 0, "\(status)")
            #expect(status.stderr.contains("does not answer"), "\(status)")
            let mount = try await TestMount.mountCommand(
                remote: scratch.remote, mountpoint: first.mountpoint, cacheDir: scratch.path + "/other-cache",
                timeout: .seconds(40)
            ).run()
            #expect(!mount.timedOut && mount.status != 0, "\(mount)")
            #expect(mount.stderr.contains("does not answer"), "\(mount)")
            let unmount = try await FpfsBinary.command(["unmount", first.mountpoint], timeout: .seconds(40)).run()
            #expect(unmount.succeeded, "\(unmount)")
            #expect(!MountTable.isMounted(first.mountpoint), "still in /proc/mounts after fpfs unmount")

            daemon.send(SIGCONT)
            #expect(
                await daemon.waitForExit(timeout: .seconds(15)), "the daemon still runs 15 s after it was let go on")
            let second = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { second.unmount() }
            try await second.sync()
            #expect(try String(contentsOfFile: scratch.remote + "/new.txt", encoding: .utf8) == "written\n")
        }

        /// Polls /proc/mounts: true once nothing is mounted at `mountpoint`.
        static func waitUntilUnmounted(_ mountpoint: String, timeout: Duration = .seconds(10)) async -> Bool {
            let deadline = ContinuousClock.now + timeout
            while MountTable.isMounted(mountpoint) {
                if ContinuousClock.now >= deadline { return false }
                try? await Task.sleep(for: .milliseconds(50))
            }
            return true
        }
    }
}
