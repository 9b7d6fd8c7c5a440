import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// Issue 51 items 11, 14, 15 and 17, through the real mount: what a remote says beyond a
    /// bound (a date past 2262, a size past 2^63, a 300-byte name, an endless PROPFIND, a GET that
    /// trickles) is clamped, skipped or refused with a clear errno, never a crashed daemon or a
    /// hung reader (docs/SEMANTICS.md, Limits).
    @Suite("Limits of what a remote says")
    struct LimitsTests {
        /// `--remote-timeout` of the fake server's mounts, short so that a hang would show.
        static let remoteTimeout = 3

        /// 2262-04-11 23:47:16.854775807 UTC, the latest time the mount shows, as `stat -c %Y`.
        static let latestSecond = "9223372036"

        @Test(
            "a remote time after 2262 shows as 2262-04-11 and the mount keeps running, also after a remount",
            arguments: [WritableRemote.Kind.folder, .apache])
        func farFutureTimesAreClamped(_ kind: WritableRemote.Kind) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("far.txt", "from the future\n")
            try scratch.writeRemote("near.txt", "from now\n")
            try await Command(["touch", "-d", "2300-01-01", scratch.remote + "/far.txt"]).check()
            let remote = try await WritableRemote.start(kind, in: scratch)
            defer { remote.stop() }
            for round in ["first mount", "remount"] {
                let mount = try await TestMount.start(remote: remote.argument, in: scratch)
                defer { mount.unmount() }
                let listing = await Command(["ls", "-A", mount.mountpoint], timeout: .seconds(60)).run()
                #expect(listing.lines == ["far.txt", "near.txt"], "\(kind), \(round): \(listing)\n\(mount.logTail())")
                let times = try await Command(["stat", "-c", "%Y", mount.path("far.txt")]).check()
                #expect(times.lines == [Self.latestSecond], "\(kind), \(round): far.txt's time")
                let text = try await Command(["cat", mount.path("far.txt")], timeout: .seconds(60)).check()
                #expect(text.stdout == "from the future\n", "\(kind), \(round)")
                #expect(mount.daemon?.isAlive == true, "\(kind), \(round): the daemon died\n\(mount.logTail())")
            }
        }

        @Test(
            "while the remote is down, creating (and removing) a file or folder in a folder never listed answers at once; a name the remote holds gets a conflict name, and the remote's item shows beside it",
            arguments: [WritableRemote.Kind.folder, .apache])
        func offlineCreationInAFolderNeverListed(_ kind: WritableRemote.Kind) async throws {
            let files = ["sub/taken.txt": "the remote's\n", "sub/other.txt": "other\n"]
            try await WriteMountTests.withMount(kind, files: files, options: ["--poll-interval", "0"]) {
                remote, mount in
                // The root is listed, sub is not.
                _ = try await Command(["stat", mount.path("sub")]).check()
                try remote.goAway()
                let started = ContinuousClock.now
                let made = await Command.bash(
                    #"echo mine > "$1/sub/new.txt" && mkdir "$1/sub/folder" && echo local > "$1/sub/taken.txt""#,
                    mount.mountpoint
                ).run()
                let took = ContinuousClock.now - started
                #expect(made.succeeded, "\(kind): \(made)\n\(mount.logTail())")
                #expect(took < .seconds(10), "\(kind): the creations took \(took)")
                let removed = await Command.bash(
                    #"echo gone > "$1/sub/gone.txt" && rm "$1/sub/gone.txt""#, mount.mountpoint
                ).run()
                #expect(removed.succeeded, "\(kind): \(removed)\n\(mount.logTail())")
                try await remote.comeBack()
                // Listed before the creations are sent: the local taken.txt holds the name.
                _ = try await Command(["ls", mount.path("sub")]).check()
                try await mount.sync()
                let folder = remote.folder + "/sub"
                #expect(try String(contentsOfFile: folder + "/new.txt", encoding: .utf8) == "mine\n", "\(kind)")
                var isFolder: ObjCBool = false
                #expect(FileManager.default.fileExists(atPath: folder + "/folder", isDirectory: &isFolder))
                #expect(isFolder.boolValue, "\(kind): sub/folder is not a folder on the remote")
                #expect(try String(contentsOfFile: folder + "/taken.txt", encoding: .utf8) == "the remote's\n")
                let names = try FileManager.default.contentsOfDirectory(atPath: folder)
                let conflict = try #require(
                    names.first { $0.hasPrefix("taken (conflict ") }, "\(kind): no conflict copy in \(names)")
                #expect(try String(contentsOfFile: folder + "/" + conflict, encoding: .utf8) == "local\n")
                #expect(!names.contains("gone.txt"), "\(kind): \(names)")
                // The mount shows both; the remote's file was left out of the folder's first
                // listing while the local one held its name (DECISIONS 291).
                let shown = try FileManager.default.contentsOfDirectory(atPath: mount.path("sub")).sorted()
                #expect(shown == names.sorted(), "\(kind): the mount shows \(shown), the remote has \(names.sorted())")
                #expect(try String(contentsOfFile: mount.path("sub/taken.txt"), encoding: .utf8) == "the remote's\n")
            }
        }

        @Test(
            "a GET that trickles a byte every half second fails the read with EHOSTDOWN after the remote bound; unmount does not wait for it"
        )
        func tricklingReadFails() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try PatternFile.write(to: scratch.remote + "/trickle.bin", size: 4096, seed: 3)
            try scratch.writeRemote("fine.txt", "fine\n")
            let server = try await FakeWebDAVServer.start(serving: scratch.remote, in: scratch)
            defer { server.stopBlocking() }
            try server.setRules([.init(.trickle, path: "/trickle.bin", method: "GET", interval: 0.5)])
            let mount = try await TestMount.start(
                remote: server.url, in: scratch, options: ["--remote-timeout", String(Self.remoteTimeout)])
            defer { mount.unmount() }
            // Unchanged, each byte was progress: 4096 bytes at 2 B/s would read for 34 minutes.
            let cat = await Command(["cat", mount.path("trickle.bin")], timeout: .seconds(40)).run()
            #expect(!cat.timedOut && cat.stderr.contains("Host is down"), "\(cat)\n\(mount.logTail())")
            #expect(cat.duration < .seconds(25), "the trickling read took \(cat.duration)")
            let fine = try await Command(["cat", mount.path("fine.txt")], timeout: .seconds(20)).check()
            #expect(fine.stdout == "fine\n")
            // A read-ahead or retry of the trickling file may still run: unmount waits for it at
            // most the remote bound.
            _ = await Command(
                ["dd", "if=" + mount.path("trickle.bin"), "of=/dev/null", "count=1"], timeout: .seconds(1)
            )
            .run()
            let started = ContinuousClock.now
            let unmounted = mount.unmount()
            #expect(unmounted?.succeeded == true, "\(String(describing: unmounted))")
            #expect(mount.daemon.map { !$0.isAlive } ?? true, "the daemon outlived its unmount")
            #expect(ContinuousClock.now - started < .seconds(20), "unmount took \(ContinuousClock.now - started)")
        }

        @Test(
            "a PROPFIND answer nested ten million elements deep fails ls with EIO and a log line; the daemon's memory stays bounded"
        )
        func deepPropfindIsRefused() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("dir/a.txt", "a\n")
            try scratch.writeRemote("top.txt", "top\n")
            let server = try await FakeWebDAVServer.start(serving: scratch.remote, in: scratch)
            defer { server.stopBlocking() }
            try server.setRules([.init(.deepNesting, path: "/dav/dir/", method: "PROPFIND", depth: 10_000_000)])
            // The default bound: a shorter one would end the parse by the clock, not by its bounds.
            let mount = try await TestMount.start(remote: server.url, in: scratch)
            defer { mount.unmount() }
            let daemon = try #require(mount.daemon)
            let before = try Self.peakResidentKiB(of: daemon)
            let listing = await Command(["ls", mount.path("dir")], timeout: .seconds(60)).run()
            #expect(!listing.timedOut && listing.stderr.contains("Input/output error"), "\(listing)")
            let growth = try Self.peakResidentKiB(of: daemon) - before
            #expect(growth < 64 << 10, "the daemon's peak RSS grew by \(growth) KiB")
            #expect(mount.logTail(lines: 100).contains("nested deeper than"), "no log line:\n\(mount.logTail())")
            let top = try await Command(["cat", mount.path("top.txt")]).check()
            #expect(top.stdout == "top\n", "the mount serves other folders")
        }

        /// The peak resident set of `process` so far (`VmHWM`), in KiB.
        static func peakResidentKiB(of process: DaemonProcess) throws -> Int {
            let status = try String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8)
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
            return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        }

        @Test("a WebDAV entry of size 2^63 or a 300-byte name is skipped and logged; the rest of its folder lists")
        func unshowableEntriesAreSkipped() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("huge/a.txt", "a\n")
            try scratch.writeRemote("long/b.txt", "b\n")
            let server = try await FakeWebDAVServer.start(serving: scratch.remote, in: scratch)
            defer { server.stopBlocking() }
            try server.setRules([
                .init(.hugeSize, path: "/dav/huge/", method: "PROPFIND"),
                .init(.longName, path: "/dav/long/", method: "PROPFIND"),
            ])
            let mount = try await TestMount.start(
                remote: server.url, in: scratch, options: ["--remote-timeout", String(Self.remoteTimeout)])
            defer { mount.unmount() }
            for (folder, name) in [("huge", "a.txt"), ("long", "b.txt")] {
                let listing = await Command(["ls", "-A", mount.path(folder)], timeout: .seconds(60)).run()
                #expect(listing.succeeded && listing.lines == [name], "ls \(folder): \(listing)\n\(mount.logTail())")
            }
            #expect(mount.daemon?.isAlive == true, "the daemon died\n\(mount.logTail())")
            let log = mount.logTail(lines: 200)
            #expect(log.contains("huge.bin") && log.contains("beyond"), "no log line for huge.bin:\n\(log)")
            #expect(log.contains("300 bytes"), "no log line for the long name:\n\(log)")
        }
    }
}
