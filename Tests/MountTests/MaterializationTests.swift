import Foundation
import Testing

extension MountTests {
    /// Contents are downloaded only when read: metadata, listing and open cost no fetch, and the
    /// xattrs and `du` tell what is on this machine.
    @Suite("Contents arrive only when read")
    struct MaterializationTests {
        @Test("an unread file is cloud with du 0; after cat it is local, with the right bytes")
        func cloudUntilRead() async throws {
            let source = try await FixtureTree.path()
            let scratch = try Scratch()
            defer { scratch.remove() }
            let mount = try await TestMount.start(remote: source, in: scratch)
            defer { mount.unmount() }
            let file = FixtureTree.mediumFile
            let size = FixtureTree.mediumFileSize

            #expect(try await mount.xattr("user.fpfs.state", of: file) == "cloud")
            #expect(try await mount.xattr("user.fpfs.local_bytes", of: file) == "0")
            // One 512-byte block, so that `tar -S` reads it (DECISIONS 191).
            #expect(try await mount.diskUsage(of: file) == 512)
            #expect(try await !mount.xattr("user.fpfs.id", of: file).isEmpty)
            let before = try await mount.status().fetches

            let read = try await Command.bash("cat -- \"$1\" | sha256sum", mount.path(file)).check()
            let expected = try await Command(["sha256sum", "--", source + "/" + file]).check()
            #expect(read.stdout.prefix(64) == expected.stdout.prefix(64), "cat returned other bytes than the source")

            #expect(try await mount.xattr("user.fpfs.state", of: file) == "local")
            #expect(try await mount.xattr("user.fpfs.local_bytes", of: file) == String(size))
            #expect(try await mount.diskUsage(of: file) >= size, "st_blocks should count the local bytes")
            // Whole-file or block by block (SEMANTICS: the folder remote fetches aligned blocks),
            // every byte comes over once.
            let after = try await mount.status().fetches
            #expect(after.started > before.started, "cat of a cloud file started no fetch")
            #expect(
                after.bytes - before.bytes == size,
                "cat of a \(size)-byte file fetched \(after.bytes - before.bytes) bytes")

            try await Command(["cat", "--", mount.path(file)]).check()
            let again = try await mount.status().fetches
            #expect(again.started == after.started && again.bytes == after.bytes, "a local file was fetched again")
        }

        @Test("listing, stat, open and reading xattrs fetch no contents")
        func metadataFetchesNothing() async throws {
            let source = try await FixtureTree.path()
            let scratch = try Scratch()
            defer { scratch.remove() }
            let mount = try await TestMount.start(remote: source, in: scratch)
            defer { mount.unmount() }
            let root = mount.mountpoint
            let before = try await mount.status().fetches

            try await Command(["ls", "-lRA", root], timeout: .seconds(120)).check()
            try await Command(["find", root, "-ls"], timeout: .seconds(120)).check()
            try await Command.bash("find \"$1\" -print0 | xargs -0 stat -- >/dev/null", root).check()
            try await Command(["du", "-s", root], timeout: .seconds(120)).check()
            try await Command(["getfattr", "-R", "-h", "-d", "--absolute-names", root], timeout: .seconds(120)).check()
            for file in [FixtureTree.mediumFile, FixtureTree.bigFile, FixtureTree.smallFile] {
                // Opens for reading and closes without reading a byte.
                try await Command(["dd", "if=" + mount.path(file), "of=/dev/null", "count=0", "status=none"]).check()
                try await Command.bash(": < \"$1\"", mount.path(file)).check()
            }

            let after = try await mount.status().fetches
            #expect(after.started == before.started, "metadata operations started content fetches")
            #expect(after.bytes == before.bytes, "metadata operations fetched content bytes")

            // Every non-empty file is still in the cloud, and takes no disk space here.
            let states = try await Command.bash(
                "find . -type f -size +0 -print0 | xargs -0 getfattr --absolute-names -n user.fpfs.state",
                in: root, timeout: .seconds(120)
            ).check().lines.filter { $0.hasPrefix("user.fpfs.state=") }
            let fileCount = try await Command(["find", ".", "-type", "f", "-size", "+0", "-printf", "x"], in: root)
                .check().stdout.count
            #expect(states.count == fileCount, "getfattr found \(states.count) states for \(fileCount) files")
            let notCloud = states.filter { $0 != "user.fpfs.state=\"cloud\"" }
            #expect(notCloud.isEmpty, "unread files not in state cloud: \(notCloud.prefix(10))")
            // Unread files count one block (empty files none), so that `tar -S` reads them (DECISIONS 191).
            let blocks = try await Command(["find", ".", "-type", "f", "-printf", "%b %s\\n"], in: root).check()
            #expect(
                blocks.lines.allSatisfy { $0 == "0 0" || $0.hasPrefix("1 ") },
                "unread files report st_blocks other than 1: \(blocks.lines.prefix(5))")
        }
    }
}
