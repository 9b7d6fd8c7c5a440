import Foundation
import TestServers
import Testing

extension MountTests {
    /// Issue 7, parts 2 and 3, through the real binary: `--cache-size` bounds what stays local,
    /// pinned and dirty files stay through eviction, `fpfs pin` makes a folder local for good, and
    /// `fpfs evict` frees clean files and refuses dirty ones.
    @Suite("Bounded cache, pins and eviction")
    struct CacheMountTests {
        /// Runs `body` against a mount of a fresh remote of `kind` prepared by `prepare` (given the
        /// remote folder); unmounts and removes everything afterwards, whatever happens.
        static func withMount(
            _ kind: WritableRemote.Kind, options: [String], prepare: (String) async throws -> Void,
            _ body: (WritableRemote, TestMount, Scratch) async throws -> Void
        ) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try await prepare(scratch.remote)
            let remote = try await WritableRemote.start(kind, in: scratch)
            defer { remote.stop() }
            let mount = try await TestMount.start(remote: remote.argument, in: scratch, options: options)
            defer { mount.unmount() }
            try await body(remote, mount, scratch)
        }

        /// `du -sB1` of a folder outside the mount.
        static func diskUsage(_ path: String) async throws -> Int {
            let output = try await Command(["du", "-sB1", "--", path]).check()
            guard let first = output.stdout.split(separator: "\t").first, let bytes = Int(first) else {
                throw MountTestFailure("cannot read du output \(output.stdout)")
            }
            return bytes
        }

        /// sha256sum of every file below `folder`, by relative path.
        static func checksums(of folder: String) async throws -> [String] {
            try await Command.bash(
                "cd \"$1\" && find . -type f -print0 | sort -z | xargs -0 sha256sum", folder, timeout: .seconds(120)
            ).check().lines
        }

        @Test(
            "reading 1 GiB with --cache-size 100MiB leaves at most 100 MiB cached; pinned and dirty files stay",
            arguments: [WritableRemote.Kind.folder, .apache])
        func boundedCache(_ kind: WritableRemote.Kind) async throws {
            let count = 16
            let options = [
                "--cache-size", "100MiB", "--remote-timeout", "5",
                // The dirty file's creation never reaches the remote, so it stays dirty.
                "--inject-faults", "error=serverUnreachable:create:dirty.bin",
            ]
            try await Self.withMount(
                kind, options: options,
                prepare: { remote in
                    try FileManager.default.createDirectory(atPath: remote + "/big", withIntermediateDirectories: true)
                    for index in 0..<count {
                        try await Command(["truncate", "-s", "64M", remote + "/big/f-\(index)"]).check()
                    }
                    try PatternFile.write(to: remote + "/pinned.bin", size: 8 << 20, seed: 11)
                }
            ) { _, mount, scratch in
                try await FpfsBinary.command(["pin", mount.path("pinned.bin")], timeout: .seconds(120)).check()
                #expect(try await mount.xattr("user.fpfs.state", of: "pinned.bin") == "local")
                let dirtySource = scratch.path + "/dirty-source"
                try PatternFile.write(to: dirtySource, size: 8 << 20, seed: 12)
                try await Command(["cp", dirtySource, mount.path("dirty.bin")]).check()

                try await Command.bash(
                    "for f in \"$1\"/big/*; do cat \"$f\" > /dev/null || exit 1; done", mount.mountpoint,
                    timeout: .seconds(600)
                ).check()

                // Eviction runs in the background after the last blocks are committed.
                let blocks = mount.cacheDir + "/blocks"
                let bound = 100 << 20
                var used = try await Self.diskUsage(blocks)
                for _ in 0..<100 where used > bound {
                    try await Task.sleep(for: .milliseconds(200))
                    used = try await Self.diskUsage(blocks)
                }
                #expect(used <= bound, "the cache's blocks use \(used) bytes, more than the bound \(bound)")
                var localBytes = 0
                var cloudFiles = 0
                for index in 0..<count {
                    let name = "big/f-\(index)"
                    localBytes += Int(try await mount.xattr("user.fpfs.local_bytes", of: name)) ?? 0
                    if try await mount.xattr("user.fpfs.state", of: name) == "cloud" { cloudFiles += 1 }
                }
                #expect(localBytes <= bound, "user.fpfs.local_bytes of the files read add up to \(localBytes)")
                let status = try await mount.status()
                #expect(status.cache.bound == bound && status.cache.bytes <= bound, "fpfs status: \(status.cache)")
                #expect(cloudFiles >= count - 2, "only \(cloudFiles) of \(count) files read were evicted")
                #expect(try await mount.xattr("user.fpfs.state", of: "pinned.bin") == "local")
                #expect(try await mount.xattr("user.fpfs.pinned", of: "pinned.bin") == "1")
                #expect(["dirty", "uploading"].contains(try await mount.xattr("user.fpfs.state", of: "dirty.bin")))
                try await Command(["cmp", dirtySource, mount.path("dirty.bin")]).check()
            }
        }

        @Test(
            "fpfs pin of a folder makes every file in it local, and they read the same with the server gone",
            arguments: [WritableRemote.Kind.folder, .apache])
        func pinnedFolderOffline(_ kind: WritableRemote.Kind) async throws {
            try await Self.withMount(
                kind, options: ["--remote-timeout", "3"],
                prepare: { remote in
                    try FileManager.default.createDirectory(
                        atPath: remote + "/keep/sub/deeper", withIntermediateDirectories: true)
                    try PatternFile.write(to: remote + "/keep/a.bin", size: 3 << 20, seed: 21)
                    try PatternFile.write(to: remote + "/keep/sub/b.bin", size: (5 << 20) + 7, seed: 22)
                    try Data("deep\n".utf8).write(to: URL(fileURLWithPath: remote + "/keep/sub/deeper/c.txt"))
                    try Data().write(to: URL(fileURLWithPath: remote + "/keep/empty.txt"))
                    try Data("not pinned\n".utf8).write(to: URL(fileURLWithPath: remote + "/other.txt"))
                }
            ) { remote, mount, scratch in
                let expected = try await Self.checksums(of: remote.folder + "/keep")
                let pin = try await FpfsBinary.command(["pin", mount.path("keep")], timeout: .seconds(120)).check()
                #expect(pin.stdout.contains("4 of 4 files"), "fpfs pin said \(pin.stdout)")
                for file in ["keep/a.bin", "keep/sub/b.bin", "keep/sub/deeper/c.txt", "keep/empty.txt"] {
                    #expect(try await mount.xattr("user.fpfs.state", of: file) == "local", "\(file) is not local")
                    #expect(try await mount.xattr("user.fpfs.pinned", of: file) == "1", "\(file) is not pinned")
                }
                #expect(try await mount.xattr("user.fpfs.pinned", of: "other.txt") == "0")

                try remote.goAway()
                let offline = try await Self.checksums(of: mount.path("keep"))
                LineComparison.expectEqual(expected, offline, "checksums of the pinned folder with the server gone")

                // New children inherit the pin.
                try await Command(["touch", mount.path("keep/sub/new.txt")]).check()
                #expect(try await mount.xattr("user.fpfs.pinned", of: "keep/sub/new.txt") == "1")

                // Pins are kept across a remount (here an offline one: the server is still away).
                mount.unmount()
                let again = try await TestMount.start(
                    remote: remote.argument, in: scratch, options: ["--remote-timeout", "3"])
                defer { again.unmount() }
                #expect(try await again.xattr("user.fpfs.pinned", of: "keep/sub/b.bin") == "1")
                #expect(try await again.xattr("user.fpfs.pinned", of: "other.txt") == "0")
                var remounted = try await Self.checksums(of: again.path("keep"))
                remounted.removeAll { $0.hasSuffix("./sub/new.txt") }
                LineComparison.expectEqual(expected, remounted, "checksums of the pinned folder after a remount")
            }
        }

        @Test("fpfs evict frees a clean file and refuses a dirty one; setfattr user.fpfs.pinned pins")
        func evictAndSetfattr() async throws {
            let options = ["--remote-timeout", "3", "--inject-faults", "error=serverUnreachable:create:dirty.txt"]
            try await Self.withMount(
                .folder, options: options,
                prepare: { remote in
                    try PatternFile.write(to: remote + "/clean.bin", size: 4 << 20, seed: 31)
                    try PatternFile.write(to: remote + "/by-xattr.bin", size: 2 << 20, seed: 32)
                }
            ) { remote, mount, _ in
                try await Command(["cmp", remote.folder + "/clean.bin", mount.path("clean.bin")]).check()
                #expect(try await mount.xattr("user.fpfs.state", of: "clean.bin") == "local")
                let before = try await mount.diskUsage(of: "clean.bin")
                #expect(before >= 4 << 20)

                try await Command.bash("echo changed > \"$1\"", mount.path("dirty.txt")).check()
                let refused = try await FpfsBinary.command(["evict", mount.path("dirty.txt")]).run()
                #expect(!refused.succeeded, "evicting a dirty file succeeded: \(refused)")
                #expect(refused.stderr.contains("dirty.txt") && refused.stderr.contains("not yet on the remote"))
                #expect(try await mount.xattr("user.fpfs.state", of: "dirty.txt") != "cloud")

                try await FpfsBinary.command(["evict", mount.path("clean.bin")]).check()
                #expect(try await mount.xattr("user.fpfs.state", of: "clean.bin") == "cloud")
                #expect(try await mount.diskUsage(of: "clean.bin") == 512)  // one block: DECISIONS 191
                #expect(try await Self.diskUsage(mount.cacheDir + "/blocks") < before)
                try await Command(["cmp", remote.folder + "/clean.bin", mount.path("clean.bin")]).check()
                #expect(try await mount.xattr("user.fpfs.state", of: "clean.bin") == "local")

                try await Command(["setfattr", "-n", "user.fpfs.pinned", "-v", "1", mount.path("by-xattr.bin")]).check()
                #expect(try await mount.xattr("user.fpfs.pinned", of: "by-xattr.bin") == "1")
                var state = ""
                for _ in 0..<100 where state != "local" {
                    state = try await mount.xattr("user.fpfs.state", of: "by-xattr.bin")
                    if state != "local" { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(state == "local", "pinning through setfattr did not download the file")
                try await Command(["setfattr", "-n", "user.fpfs.pinned", "-v", "0", mount.path("by-xattr.bin")]).check()
                #expect(try await mount.xattr("user.fpfs.pinned", of: "by-xattr.bin") == "0")

                // Pinning what is not local while the remote is away fails within the bound, saying why.
                try await FpfsBinary.command(["evict", mount.path("clean.bin")]).check()
                try remote.goAway()
                let away = try await FpfsBinary.command(["pin", mount.path("clean.bin")], timeout: .seconds(60)).run()
                #expect(!away.succeeded && away.stderr.contains("clean.bin"), "fpfs pin with the remote away: \(away)")
                #expect(away.stderr.contains("Host is down"), "fpfs pin with the remote away: \(away)")
                try await remote.comeBack()
            }
        }

        @Test(
            "a file written here and synced is evicted by deleting its local copy, and reads back from the remote",
            arguments: [WritableRemote.Kind.folder, .apache])
        func writtenFileEvicted(_ kind: WritableRemote.Kind) async throws {
            try await Self.withMount(kind, options: [], prepare: { _ in }) { _, mount, scratch in
                let source = scratch.path + "/source.bin"
                try PatternFile.write(to: source, size: (3 << 20) + 5, seed: 41)
                try await Command(["cp", source, mount.path("written.bin")]).check()
                try await mount.sync()
                #expect(try await mount.xattr("user.fpfs.state", of: "written.bin") == "local")
                try await FpfsBinary.command(["evict", mount.path("written.bin")]).check()
                #expect(try await mount.xattr("user.fpfs.state", of: "written.bin") == "cloud")
                #expect(try await mount.diskUsage(of: "written.bin") == 512)  // one block: DECISIONS 191
                #expect(
                    try FileManager.default.contentsOfDirectory(atPath: mount.cacheDir + "/local").isEmpty,
                    "the local copy is still there")
                try await Command(["cmp", source, mount.path("written.bin")]).check()
            }
        }

        @Test("fpfs pin, unpin and evict of a path outside an fpfs mount fail and say so")
        func outsideAMount() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            for verb in ["pin", "unpin", "evict"] {
                let output = try await FpfsBinary.command([verb, scratch.path]).run()
                #expect(!output.succeeded)
                #expect(output.stderr.contains("is not in an fpfs mount"), "fpfs \(verb) said \(output)")
            }
        }
    }
}
