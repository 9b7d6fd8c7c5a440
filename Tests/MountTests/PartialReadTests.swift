import Foundation
import Testing

extension MountTests {
    /// Issue 3 through the real mount: a read fetches only the aligned blocks it touches, and a
    /// file read in pieces ends up whole and equal to the source.
    @Suite("Reads fetch only the blocks they touch")
    struct PartialReadTests {
        @Test("4 KiB at 900 MiB of a 1 GiB cloud file fetches at most two blocks; a whole read then equals the source")
        func farReadFetchesTwoBlocks() async throws {
            let source = try await FixtureTree.path()
            let scratch = try Scratch()
            defer { scratch.remove() }
            let mount = try await TestMount.start(remote: source, in: scratch)
            defer { mount.unmount() }
            let file = FixtureTree.bigFile
            let block = 64 << 10  // the default --block-size
            #expect(try await mount.xattr("user.fpfs.state", of: file) == "cloud")

            // 4 KiB at 900 MiB, with dd's own 4 KiB reads, so the kernel asks for little more.
            let piece = "dd if=\"$1\" bs=4096 skip=$((900 * 256)) count=1 status=none | sha256sum"
            let read = try await Command.bash(piece, mount.path(file)).check()
            let expected = try await Command.bash(piece, source + "/" + file).check()
            #expect(read.stdout.prefix(64) == expected.stdout.prefix(64), "the 4 KiB at 900 MiB differ from the source")
            #expect(try await mount.xattr("user.fpfs.state", of: file) == "partial")
            let local = try #require(Int(try await mount.xattr("user.fpfs.local_bytes", of: file)))
            #expect(local > 0 && local <= 2 * block, "a 4 KiB read made \(local) bytes local")
            #expect(try await mount.status().fetches.bytes <= 2 * block, "a 4 KiB read fetched more than two blocks")

            let whole = try await Command.bash("sha256sum < \"$1\"", mount.path(file), timeout: .seconds(300)).check()
            let sourceWhole = try await Command.bash("sha256sum < \"$1\"", source + "/" + file, timeout: .seconds(300))
                .check()
            #expect(whole.stdout.prefix(64) == sourceWhole.stdout.prefix(64), "the whole file differs from the source")
            #expect(try await mount.xattr("user.fpfs.state", of: file) == "local")
            #expect(try await mount.xattr("user.fpfs.local_bytes", of: file) == String(FixtureTree.bigFileSize))
        }

        @Test("a copy of cat named updatedb gets EDEADLK on a cloud file, reads a local one, fetches nothing")
        func indexerIsRefusedDownloads() async throws {
            let source = try await FixtureTree.path()
            let scratch = try Scratch()
            defer { scratch.remove() }
            let updatedb = scratch.path + "/bin/updatedb"
            try FileManager.default.createDirectory(atPath: scratch.path + "/bin", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: "/bin/cat", toPath: updatedb)

            let mount = try await TestMount.start(remote: source, in: scratch)
            defer { mount.unmount() }
            let local = FixtureTree.smallFile
            try await Command(["cat", "--", mount.path(local)]).check()
            let before = try await mount.status().fetches

            let refused = await Command([updatedb, "--", mount.path(FixtureTree.mediumFile)]).run()
            #expect(refused.status != 0, "updatedb read a cloud file")
            #expect(refused.stderr.contains("Resource deadlock avoided"), "updatedb saw: \(refused.stderr)")
            let allowed = try await Command([updatedb, "--", mount.path(local)]).check()
            #expect(allowed.stdout == FixtureTree.smallFileContents)
            let status = try await mount.status()
            #expect(status.fetches.started == before.started, "a refused read started a fetch")
            // The kernel cuts its first read-ahead (1 MiB, DECISIONS 46) into 512 KiB requests
            // (DECISIONS 50), may send a synchronous and an asynchronous part, and retries a failed
            // read once, so one refused `cat` counts from one to six reads (5 seen).
            #expect(
                (1...6).contains(status.blocked["updatedb"] ?? 0), "status miscounts the refusal: \(status.blocked)")
            #expect(try await mount.xattr("user.fpfs.state", of: FixtureTree.mediumFile) == "cloud")
            mount.unmount()

            let open = try await TestMount.start(remote: source, in: scratch, options: ["--non-materializing", ""])
            defer { open.unmount() }
            let read = try await Command.bash(
                "\"$1\" -- \"$2\" | sha256sum", updatedb, open.path(FixtureTree.mediumFile)
            )
            .check()
            let expected = try await Command(["sha256sum", "--", source + "/" + FixtureTree.mediumFile]).check()
            #expect(
                read.stdout.prefix(64) == expected.stdout.prefix(64), "with an empty list updatedb read other bytes")
        }

        @Test("4N readers of different files on a slow remote keep exactly N fetches in flight", arguments: [1, 2, 4])
        func pipelineDepthBoundsFetches(depth: Int) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let count = 4 * depth
            for index in 0..<count {
                try scratch.writeRemote("file-\(index).txt", String(repeating: "\(index)\n", count: 1000))
            }
            let mount = try await TestMount.start(
                remote: "file://\(scratch.remote)?delay=300ms", mountpoint: scratch.mountpoint, cacheDir: scratch.cache,
                options: ["--pipeline-depth", String(depth)])
            defer { mount.unmount() }
            try await Command(["ls", mount.mountpoint]).check()

            let readAll = "for f in \"$1\"/file-*.txt; do cat \"$f\" > /dev/null & done; wait"
            try await Command.bash(readAll, mount.mountpoint, timeout: .seconds(120)).check()
            let fetches = try await mount.status().fetches
            #expect(fetches.started >= count, "\(count) readers of cloud files started \(fetches.started) fetches")
            #expect(
                fetches.maxInFlight == depth, "at --pipeline-depth \(depth), \(fetches.maxInFlight) fetches ran at once"
            )
        }

        @Test("a large file read through the mount is held in memory once, as the cache file's pages, and maps shared")
        func largeFilesBypassTheMountsPageCache() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            // 64 MiB: the size from which handles reading by requests use direct I/O (DECISIONS 155).
            let size = 64 << 20
            try PatternFile.write(to: scratch.remote + "/read.bin", size: size, seed: 31)
            try PatternFile.write(to: scratch.remote + "/mapped.bin", size: size, seed: 32)
            let mount = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { mount.unmount() }

            let read = try await Command(["sha256sum", "--", mount.path("read.bin")]).check()
            let expected = try await Command(["sha256sum", "--", scratch.remote + "/read.bin"]).check()
            #expect(read.stdout.prefix(64) == expected.stdout.prefix(64))
            // The kernel kept none of it in the mount's page cache (cachestat, Linux 6.5 and later).
            let cachestat = """
                import ctypes, os, sys
                fd = os.open(sys.argv[1], os.O_RDONLY)
                range_, stat = (ctypes.c_uint64 * 2)(0, 0), (ctypes.c_uint64 * 5)()
                libc = ctypes.CDLL(None, use_errno=True)
                print(stat[0] if libc.syscall(451, fd, range_, stat, 0) == 0 else -1)
                """
            let cached = try await Command(["python3", "-c", cachestat, mount.path("read.bin")]).check()
            let pages = Int(cached.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            #expect(pages >= 0 && pages < 256, "the mount's page cache holds \(pages) pages of the file")
            let again = try await Command(["sha256sum", "--", mount.path("read.bin")]).check()
            #expect(again.stdout == read.stdout, "the second read, passed through to the cache file, differs")

            // A shared map of a handle opened cold, with direct I/O: the kernel maps it because the
            // mount asked for FUSE_DIRECT_IO_ALLOW_MMAP.
            let mapping = """
                import hashlib, mmap, sys
                with open(sys.argv[1], "rb") as file:
                    with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                        print(hashlib.sha256(mapped[:1 << 20] + mapped[-4096:]).hexdigest())
                """
            let mapped = try await Command(["python3", "-c", mapping, mount.path("mapped.bin")]).check()
            let source = try await Command(["python3", "-c", mapping, scratch.remote + "/mapped.bin"]).check()
            #expect(mapped.stdout == source.stdout)
        }

        @Test("remounted with the remote gone: what was read is served, the rest fails with EHOSTDOWN, ls -lR works")
        func offlineRemount() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("read/before.txt", String(repeating: "read before\n", count: 10_000))
            try scratch.writeRemote("never/read.txt", "never read\n")
            let mount = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { mount.unmount() }
            let before = try await Command(["sha256sum", "--", mount.path("read/before.txt")]).check()
            try await Command(["ls", "-lR", mount.mountpoint]).check()
            mount.unmount()

            try FileManager.default.moveItem(atPath: scratch.remote, toPath: scratch.path + "/gone")
            let offline = try await TestMount.start(
                remote: scratch.remote, in: scratch, options: ["--remote-timeout", "3"])
            defer { offline.unmount() }
            let again = try await Command(["sha256sum", "--", offline.path("read/before.txt")]).check()
            #expect(again.stdout.prefix(64) == before.stdout.prefix(64), "offline, a local file reads other bytes")
            let started = ContinuousClock.now
            let failed = await Command(["cat", "--", offline.path("never/read.txt")], timeout: .seconds(60)).run()
            #expect(failed.status != 0 && failed.stderr.contains("Host is down"), "offline cat gave \(failed)")
            #expect(ContinuousClock.now - started < .seconds(30), "offline cat took longer than its bound")
            let listing = try await Command(["ls", "-lR", offline.mountpoint]).check()
            #expect(listing.stdout.contains("before.txt") && listing.stdout.contains("read.txt"))
        }
    }
}
