import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// One cache folder, one daemon (DECISIONS 200): a second mount of the same cache folder is
    /// refused with the name of the mount that holds it, and a daemon finishing an unmount never
    /// removes what the next mount made.
    @Suite("One daemon per cache folder")
    struct CacheFolderTests {
        @Test("a second mount with the same cache folder is refused, naming the mount that holds it")
        func secondMountRefused() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("a.txt", "alpha\n")
            let first = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { first.unmount() }
            let daemon = try #require(first.daemon, "no pid in \(first.cacheDir)/daemon.pid")

            let other = scratch.path + "/mnt2"
            try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
            let second = try await TestMount.mountCommand(
                remote: scratch.remote, mountpoint: other, cacheDir: scratch.cache, timeout: .seconds(60)
            ).run()
            let stray = TestMount(remote: scratch.remote, mountpoint: other, cacheDir: scratch.path + "/none")
            defer { stray.unmount() }
            #expect(!second.succeeded, "a second mount of the same cache folder was accepted: \(second)")
            #expect(!MountTable.isMounted(other), "the second mount is in /proc/mounts")
            #expect(
                second.stderr.contains(first.mountpoint) && second.stderr.contains("pid \(daemon.pid)"),
                "the refusal does not name the mount that holds the folder: \(second.stderr)")
            // The first mount keeps its own socket and pid file.
            #expect(try await first.status().pid == daemon.pid)
            #expect(DaemonProcess(pidFile: first.cacheDir + "/daemon.pid")?.pid == daemon.pid)
        }

        @Test("a daemon that finishes its unmount late leaves the next mount's socket and pid file alone")
        func lateExitKeepsNextMountsFiles() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("a.txt", "alpha\n")
            let first = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { first.unmount() }
            let old = try #require(first.daemon, "no pid in \(first.cacheDir)/daemon.pid")
            // Stopped, it cannot see its unmount: it is the daemon still finishing after it.
            old.send(SIGSTOP)
            defer { old.send(SIGCONT) }
            try await Command(["fusermount3", "-u", "-z", first.mountpoint]).check()

            let other = scratch.path + "/mnt2"
            try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
            let starting = Task {
                try await TestMount.start(remote: scratch.remote, mountpoint: other, cacheDir: scratch.cache)
            }
            try await Task.sleep(for: .seconds(2))
            old.send(SIGCONT)
            #expect(await old.waitForExit(timeout: .seconds(20)), "the old daemon did not exit")
            let second = try await starting.value
            defer { second.unmount() }
            let daemon = try #require(second.daemon, "no pid in \(second.cacheDir)/daemon.pid")
            #expect(daemon.pid != old.pid)
            #expect(
                DaemonProcess(pidFile: second.cacheDir + "/daemon.pid")?.pid == daemon.pid,
                "the old daemon removed the new mount's pid file")
            let status = try await FpfsBinary.command(["status", other, "--json"], timeout: .seconds(20)).run()
            #expect(status.succeeded, "the new mount's control socket is gone: \(status)")
            #expect(try await Command(["cat", second.path("a.txt")]).check().stdout == "alpha\n")
        }
    }
}
