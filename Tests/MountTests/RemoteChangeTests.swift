import Foundation
import TestServers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// Issue 7, part 1, through the real binary: changes made on the remote (in its folder, behind
    /// the server's back) show in the mount after `fpfs signal`, after a poll, and after a remount,
    /// although the kernel may cache names and attributes for a minute (ARCHITECTURE §5).
    @Suite("Changes made on the remote")
    struct RemoteChangeTests {
        static let kinds: [WritableRemote.Kind] = [.folder, .apache, .nextcloud]

        static let files = [
            "changed.txt": "the first version\n", "deleted.txt": "gone soon\n", "old name.txt": "moved\n",
            "sub/inner.txt": "inside\n", "sub/deeper/leaf.txt": "a leaf\n", "other/kept.txt": "kept\n",
        ]

        /// The changes every test makes on the remote: one of each kind.
        static func changeRemote(_ remote: WritableRemote) throws {
            let folder = remote.folder
            let manager = FileManager.default
            try Data("the second, longer version\n".utf8).write(to: URL(fileURLWithPath: folder + "/changed.txt"))
            try manager.removeItem(atPath: folder + "/deleted.txt")
            try manager.moveItem(atPath: folder + "/old name.txt", toPath: folder + "/sub/new name.txt")
            try Data("new\n".utf8).write(to: URL(fileURLWithPath: folder + "/sub/deeper/added.txt"))
            try manager.removeItem(atPath: folder + "/other")
            try manager.createDirectory(atPath: folder + "/created", withIntermediateDirectories: false)
            try Data("new folder\n".utf8).write(to: URL(fileURLWithPath: folder + "/created/file.txt"))
        }

        /// What the mount shows once it has the changes: the tree and every file's text.
        static let changedTree = [
            "changed.txt": "the second, longer version\n", "sub/inner.txt": "inside\n",
            "sub/new name.txt": "moved\n", "sub/deeper/leaf.txt": "a leaf\n", "sub/deeper/added.txt": "new\n",
            "created/file.txt": "new folder\n",
        ]

        /// Every file under the mount with its text (`find` and `cat`, through the kernel).
        static func contents(of mount: TestMount) async throws -> [String: String] {
            let listing = try await Command.bash(
                #"cd "$1" && find . -type f -printf '%P\n' | sort"#, mount.mountpoint
            ).check()
            var contents: [String: String] = [:]
            for name in listing.stdout.split(separator: "\n").map(String.init) {
                contents[name] = try String(contentsOfFile: mount.path(name), encoding: .utf8)
            }
            return contents
        }

        @Test(
            "fpfs signal shows updates, renames, moves and deletions at once; an open handle keeps its version",
            arguments: kinds)
        func signalShowsChanges(_ kind: WritableRemote.Kind) async throws {
            try await WriteMountTests.withMount(kind, files: Self.files, options: ["--poll-interval", "0"]) {
                remote, mount in
                // Everything looked at and read, so the kernel and the cache hold all of it.
                let before = try await Self.contents(of: mount)
                #expect(before == Self.files)
                let handle = open(mount.path("changed.txt"), O_RDONLY | O_CLOEXEC)
                try #require(handle >= 0)
                defer { close(handle) }

                try Self.changeRemote(remote)
                let signal = try await FpfsBinary.command(["signal", mount.mountpoint], timeout: .seconds(90)).check()
                #expect(signal.stdout.contains("changes from the remote"))

                #expect(try await Self.contents(of: mount) == Self.changedTree)
                var buffer = [UInt8](repeating: 0, count: 100)
                let count = pread(handle, &buffer, buffer.count, 0)
                #expect(String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self) == "the first version\n")
                #expect(!FileManager.default.fileExists(atPath: mount.path("deleted.txt")))
                #expect(!FileManager.default.fileExists(atPath: mount.path("other/kept.txt")))
                #expect(try await mount.xattr("user.fpfs.state", of: "changed.txt") == "local")
            }
        }

        @Test(
            "a remote change below a folder moved here before the next round shows once the move is sent",
            arguments: [WritableRemote.Kind.folder, .apache])
        func changeBelowAMovedFolder(_ kind: WritableRemote.Kind) async throws {
            let files = ["d/a.txt": "", "d/kept.txt": "kept\n"]
            try await WriteMountTests.withMount(kind, files: files, options: ["--poll-interval", "0"]) { remote, mount in
                #expect(try await Self.contents(of: mount) == files)
                // A round, so that the next one compares with a walk that had d/a.txt (checker
                // seed 14003: an empty file that outlived its remote rename, DECISIONS 298).
                _ = try await FpfsBinary.command(["signal", mount.mountpoint], timeout: .seconds(90)).check()
                try FileManager.default.moveItem(atPath: remote.folder + "/d/a.txt", toPath: remote.folder + "/d/b.txt")
                try FileManager.default.moveItem(atPath: mount.path("d"), toPath: mount.path("e"))
                _ = try await FpfsBinary.command(["sync", mount.mountpoint], timeout: .seconds(90)).check()
                _ = try await FpfsBinary.command(["signal", mount.mountpoint], timeout: .seconds(90)).check()
                #expect(try await Self.contents(of: mount) == ["e/b.txt": "", "e/kept.txt": "kept\n"])
            }
        }

        @Test("a poll brings the changes without a signal", arguments: [WritableRemote.Kind.folder, .nextcloud])
        func pollShowsChanges(_ kind: WritableRemote.Kind) async throws {
            try await WriteMountTests.withMount(kind, files: Self.files, options: ["--poll-interval", "1"]) {
                remote, mount in
                #expect(try await Self.contents(of: mount) == Self.files)
                try Self.changeRemote(remote)
                // A bound, not a timing: the entry timeout is a minute, so only the poll can do it.
                var seen: [String: String] = [:]
                for _ in 0..<60 {
                    seen = try await Self.contents(of: mount)
                    if seen == Self.changedTree { break }
                    try await Task.sleep(for: .milliseconds(250))
                }
                #expect(seen == Self.changedTree)
            }
        }

        @Test("a remount shows what changed while unmounted, from the saved anchor", arguments: kinds)
        func remountShowsChanges(_ kind: WritableRemote.Kind) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            for (name, text) in Self.files { try scratch.writeRemote(name, text) }
            // More folders than an anchored round may list, so a walk would show in the count.
            for index in 0..<12 { try scratch.writeRemote("many/folder-\(index)/file.txt", "\(index)\n") }
            let remote = try await WritableRemote.start(kind, in: scratch)
            defer { remote.stop() }
            let options = ["--poll-interval", "0"]
            do {
                let mount = try await TestMount.start(remote: remote.argument, in: scratch, options: options)
                defer { mount.unmount() }
                _ = try await Self.contents(of: mount)
                _ = try await FpfsBinary.command(["signal", mount.mountpoint], timeout: .seconds(90)).check()
            }
            try Self.changeRemote(remote)
            let requestsBefore = try await remote.accessLog().count

            let mount = try await TestMount.start(remote: remote.argument, in: scratch, options: options)
            defer { mount.unmount() }
            var expected = Self.changedTree
            for index in 0..<12 { expected["many/folder-\(index)/file.txt"] = "\(index)\n" }
            #expect(try await Self.contents(of: mount) == expected)
            if kind == .nextcloud {
                let requests = try await remote.accessLog().dropFirst(requestsBefore)
                let propfinds = requests.filter { $0.method == "PROPFIND" }.count
                #expect(requests.contains { $0.method == "REPORT" }, "the round did not ask for changes: \(requests)")
                // The root at start, the server's features, and the two new folders' first listings.
                #expect(
                    propfinds <= 5, "the remount listed the tree again: \(requests.map { "\($0.method) \($0.path)" })")
            }
        }

        @Test("fpfs signal on something that is not a mount, and --poll-interval out of range, fail with a message")
        func badSignalInput() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let signal = try await FpfsBinary.command(["signal", scratch.path], timeout: .seconds(30)).run()
            #expect(!signal.succeeded)
            #expect(signal.stderr.contains("not an fpfs mount"))
            for bad in ["-1", "86401", "soon"] {
                let output = try await TestMount.mountCommand(
                    remote: scratch.remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache,
                    options: ["--poll-interval", bad]
                ).run()
                #expect(!output.succeeded)
                #expect(output.stderr.contains("poll-interval"))
            }
            #expect(MountTable.entries(at: scratch.mountpoint).isEmpty)
        }
    }
}
