import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// Issue 51 items 4, 10 and 18: what tools infer from metadata. Sparse-aware tools get a cloud
    /// file's real bytes; a folder's times move when its entries change; `access(2)` follows the
    /// modes; a reader that stops early has had little fetched for it.
    @Suite("What tools infer from metadata")
    struct ToolMetadataTests {
        static let size = 50 << 20

        @Test("tar -S, cp --sparse=always and rsync -S of an unread file give its real bytes; a local sparse file too")
        func sparseToolsGetRealBytes() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try PatternFile.write(to: scratch.remote + "/big.bin", size: Self.size, seed: 7)
            let mount = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { mount.unmount() }
            let expected = try await Command(["sha256sum", scratch.remote + "/big.bin"]).check().stdout.prefix(64)
            let out = scratch.path + "/out"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            let tools = [
                "tar -S -cf \"$2/a.tar\" -C \"$1\" big.bin && mkdir -p \"$2/t\" && tar -xf \"$2/a.tar\" -C \"$2/t\" && sha256sum \"$2/t/big.bin\"",
                "cp --sparse=always \"$1/big.bin\" \"$2/cp.bin\" && sha256sum \"$2/cp.bin\"",
                "rsync -S \"$1/big.bin\" \"$2/rsync.bin\" && sha256sum \"$2/rsync.bin\"",
            ]
            for tool in tools {
                #expect(try await mount.xattr("user.fpfs.state", of: "big.bin") == "cloud")
                let copied = try await Command.bash(tool, mount.mountpoint, out, timeout: .seconds(120)).check()
                #expect(copied.stdout.prefix(64) == expected, "\(tool) stored other bytes")
                try await FpfsBinary.command(["evict", mount.path("big.bin")]).check()
            }

            // A sparse file written here: holes read as zeros, data as written.
            let local = try await Command.bash(
                """
                set -e
                truncate -s 20M "$1/sparse.bin" && echo "the end" >> "$1/sparse.bin"
                tar -S -cf "$2/s.tar" -C "$1" sparse.bin && mkdir -p "$2/s" && tar -xf "$2/s.tar" -C "$2/s"
                cp --sparse=always "$1/sparse.bin" "$2/s-cp.bin" && rsync -S "$1/sparse.bin" "$2/s-rsync.bin"
                sha256sum < "$1/sparse.bin"; sha256sum < "$2/s/sparse.bin"; sha256sum < "$2/s-cp.bin"
                sha256sum < "$2/s-rsync.bin"
                """, mount.mountpoint, out, timeout: .seconds(60)
            ).check()
            #expect(Set(local.lines).count == 1, "copies of a local sparse file differ: \(local.stdout)")
        }

        @Test("a folder's mtime and ctime move when entries are made, removed or renamed in it")
        func folderTimesMove() async throws {
            try await WriteMountTests.withMount(.folder) { _, mount in
                // Each step, and the folders (0: a, 1: b) whose times it moves.
                let steps: [(String, [Int])] = [
                    ("touch \"$1/a/new\"", [0]), ("mkdir \"$1/a/sub\"", [0]), ("mv \"$1/a/new\" \"$1/a/renamed\"", [0]),
                    ("mv \"$1/a/renamed\" \"$1/b/moved\"", [0, 1]), ("rm \"$1/b/moved\"", [1]),
                    ("rmdir \"$1/a/sub\"", [0]), ("ln -s x \"$1/a/l\"", [0]),
                ]
                try await Command.bash("mkdir \"$1/a\" \"$1/b\"", mount.mountpoint).check()
                for (step, touched) in steps {
                    let times = "stat -c '%.9Y %.9Z' \"$1/a\" \"$1/b\""
                    let before = try await Command.bash(times, mount.mountpoint).check().lines
                    try await Task.sleep(for: .milliseconds(20))
                    let after = try await Command.bash("\(step) && \(times)", mount.mountpoint).check().lines
                    for index in touched {
                        let old = before[index].split(separator: " "), new = after[index].split(separator: " ")
                        #expect(new[0] > old[0] && new[1] > old[1], "\(step): folder times \(old) → \(new)")
                    }
                }
            }
        }

        @Test("access(2) follows the modes: X_OK on a mode-0600 file fails, on 0700 succeeds")
        func accessFollowsModes() async throws {
            try await WriteMountTests.withMount(.folder) { _, mount in
                try await Command.bash(
                    "echo x > \"$1/f600\" && chmod 600 \"$1/f600\" && echo x > \"$1/f700\" && chmod 700 \"$1/f700\"",
                    mount.mountpoint
                ).check()
                #expect(access(mount.path("f600"), X_OK) == -1 && errno == EACCES)
                #expect(access(mount.path("f600"), R_OK | W_OK) == 0)
                #expect(access(mount.path("f700"), X_OK) == 0)
                #expect(access(mount.mountpoint, X_OK) == 0)
                let test = await Command.bash("test -x \"$1/f600\"", mount.mountpoint).run()
                #expect(!test.succeeded, "test -x said a mode-0600 file is executable")
            }
        }

        @Test(
            "a reader that stops early has had at most twice what it read fetched, plus 4 MiB",
            arguments: [
                "file \"$1\"", "head -c 65536 \"$1\" > /dev/null",
                "python3 -c 'import sys; f = open(sys.argv[1], \"rb\"); f.read(65536); f.close()' \"$1\"",
            ])
        func earlyStopCostsLittle(_ reader: String) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            // A 300 MiB file: read with direct I/O, so the daemon sees exactly what the reader reads.
            try PatternFile.write(to: scratch.remote + "/big.bin", size: 300 << 20, seed: 3)
            let mount = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { mount.unmount() }
            // What the reader reads, measured on the remote's own copy.
            let read = try await Command.bash(
                "strace -f -e trace=read,pread64 -o /dev/stdout \(reader) 2>/dev/null | grep -v ENOENT"
                    + " | grep -E 'read(64)?\\(3,' | sed -E 's/.*= ([0-9]+).*/\\1/' | paste -sd+ | bc",
                scratch.remote + "/big.bin"
            ).run()
            try await Command.bash(reader, mount.path("big.bin"), timeout: .seconds(120)).check()
            var status = try await mount.status()
            for _ in 0..<100 where status.fetches.inFlight > 0 {
                try await Task.sleep(for: .milliseconds(100))
                status = try await mount.status()
            }
            let readBytes = Int(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 65536
            #expect(
                status.fetches.bytes <= 2 * max(readBytes, 65536) + (4 << 20),
                "\(reader) read \(readBytes) bytes and had \(status.fetches.bytes) fetched")
        }
    }
}
