import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests.WriteMountTests {
    /// A second mount of `remote` with a cache folder of its own, as another machine would see it.
    static func freshMount(of remote: WritableRemote) throws -> (mountpoint: String, cache: String) {
        let mountpoint = remote.scratch.path + "/mnt-fresh"
        let cache = remote.scratch.path + "/cache-fresh"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        return (mountpoint, cache)
    }

    @Test(
        "names the remote cannot hold are refused with EILSEQ and nothing is queued",
        arguments: [WritableRemote.Kind.folder, .apache])
    func unholdableNames(_ kind: WritableRemote.Kind) async throws {
        try await Self.withMount(kind, files: ["good.txt": "good\n"]) { remote, mount in
            let attempts = await Command.bash(
                """
                cd "$1"
                touch $'latin1-\\xe9.txt'; echo "touch $?"
                mkdir $'tab\\there'; echo "mkdir $?"
                mv good.txt $'bell\\a.txt'; echo "mv $?"
                ls -b
                """, mount.mountpoint
            ).run()
            if kind == .folder {
                #expect(
                    attempts.lines == ["touch 0", "mkdir 0", "mv 0", "bell\\a.txt", "latin1-\\351.txt", "tab\\there"],
                    "the shell said \(attempts)")
            } else {
                #expect(attempts.lines == ["touch 1", "mkdir 1", "mv 1", "good.txt"], "the shell said \(attempts)")
                #expect(attempts.stderr.contains("Invalid or incomplete multibyte or wide character"))
                #expect(try await mount.status().uploads.pending == 0)
                let log = try String(contentsOfFile: mount.cacheDir + "/fpfs.log", encoding: .utf8)
                #expect(log.contains("a WebDAV server keeps only names that are UTF-8 text"))
                #expect(log.contains("a WebDAV server cannot list names with control characters"))
            }
            try await mount.sync()
            let served = try await Command.bash("cd \"$1\" && ls -b", remote.folder).check()
            #expect(
                served.lines == (kind == .folder ? ["bell\\a.txt", "latin1-\\351.txt", "tab\\there"] : ["good.txt"]))
        }
    }

    @Test("user attributes reach Apache as a dead property and show in a fresh mount")
    func userAttributesOnApache() async throws {
        try await Self.withMount(.apache, files: ["tagged.txt": "tagged\n", "plain.txt": "plain\n"]) { remote, mount in
            try await Command.bash(
                """
                set -e
                cd "$1"
                setfattr -n user.color -v blue tagged.txt
                setfattr -n user.binary -v 0x00ff0a3c26 tagged.txt
                setfattr -n user.gone -v soon tagged.txt
                setfattr -x user.gone tagged.txt
                mkdir folder && setfattr -n user.kind -v folder folder
                """, mount.mountpoint
            ).check()
            try await mount.sync()
            let (mountpoint, cache) = try Self.freshMount(of: remote)
            let fresh = try await TestMount.start(remote: remote.argument, mountpoint: mountpoint, cacheDir: cache)
            defer { fresh.unmount() }
            let shown = try await Command.bash(
                "cd \"$1\" && getfattr -e hex -d -m '^user\\.[^f]' tagged.txt folder plain.txt", mountpoint
            ).check()
            #expect(
                shown.lines.filter { !$0.isEmpty } == [
                    "# file: tagged.txt", "user.binary=0x00ff0a3c26", "user.color=0x626c7565", "# file: folder",
                    "user.kind=0x666f6c646572",
                ], "getfattr in a fresh mount said \(shown)")
        }
    }

    @Test("user attributes stay on this machine where the server keeps no properties (rclone)")
    func userAttributesOnRclone() async throws {
        try await Self.withMount(.rclone, files: ["tagged.txt": "tagged\n"]) { _, mount in
            try await Command(["setfattr", "-n", "user.color", "-v", "blue", mount.path("tagged.txt")]).check()
            try await Command(["setfattr", "-n", "user.size", "-v", "big", mount.path("tagged.txt")]).check()
            try await mount.sync(seconds: 30)
            #expect(try await mount.xattr("user.color", of: "tagged.txt") == "blue")
            #expect(try await mount.xattr("user.size", of: "tagged.txt") == "big")
            #expect(try await mount.xattr("user.fpfs.state", of: "tagged.txt") == "cloud")
            let status = try await mount.status()
            #expect(status.uploads.pending == 0 && status.uploads.failing == 0)
        }
    }

    @Test("with --links, symlinks live on a WebDAV server as NAME.rclonelink files")
    func linksAsMarkerFiles() async throws {
        let files = ["target.txt": "target\n", "from-rclone.rclonelink": "a/b/c"]
        try await Self.withMount(.apache, files: files, options: ["--links"]) { remote, mount in
            try await Command(["ln", "-s", "target.txt", mount.path("link")]).check()
            #expect(try await Command(["readlink", mount.path("from-rclone")]).check().stdout == "a/b/c\n")
            try await mount.sync()
            let marker = try String(contentsOfFile: remote.folder + "/link.rclonelink", encoding: .utf8)
            #expect(marker == "target.txt")

            let (mountpoint, cache) = try Self.freshMount(of: remote)
            let fresh = try await TestMount.start(
                remote: remote.argument, mountpoint: mountpoint, cacheDir: cache, options: ["--links"])
            defer { fresh.unmount() }
            let seen = try await Command.bash(
                "cd \"$1\" && ls && readlink link from-rclone && cat link", mountpoint
            ).check()
            #expect(seen.lines == ["from-rclone", "link", "target.txt", "target.txt", "a/b/c", "target"])
            try await Command(["mv", fresh.path("link"), fresh.path("moved")]).check()
            try await Command(["rm", fresh.path("from-rclone")]).check()
            try await fresh.sync()
            let served = try FileManager.default.contentsOfDirectory(atPath: remote.folder).sorted()
            #expect(served == ["moved.rclonelink", "target.txt"])
        }
    }

    @Test("without --links a symlink on WebDAV fails with ENOTSUP and the log says why")
    func symlinkRefusalIsLogged() async throws {
        try await Self.withMount(.apache) { _, mount in
            let symlink = await Command(["ln", "-s", "anywhere", mount.path("link")]).run()
            #expect(!symlink.succeeded && symlink.stderr.contains("Operation not supported"))
            let log = try String(contentsOfFile: mount.cacheDir + "/fpfs.log", encoding: .utf8)
            #expect(log.contains("refused the symlink link: the remote cannot hold symlinks"), "\(log)")
        }
    }

    @Test("with --trash, rm and rmdir move items to the folder's trash; without it they are deleted")
    func trashOnAFolder() async throws {
        let files = ["note.txt": "note\n", "other/note.txt": "other note\n", "tree/a/b.txt": "b\n", "gone.txt": "x\n"]
        try await Self.withMount(.folder, files: files, options: ["--trash"]) { remote, mount in
            try await Command.bash(
                "set -e; cd \"$1\"; rm note.txt other/note.txt; rm -r tree", mount.mountpoint
            ).check()
            try await mount.sync()
            let trash = remote.folder + "/.Trash-\(getuid())"
            let listing = try await Command.bash("cd \"$1\" && find . -mindepth 1", trash).check()
            #expect(
                Set(listing.lines) == [
                    "./files", "./files/a", "./files/b.txt", "./files/note.txt", "./files/note.txt.2", "./files/tree",
                    "./info", "./info/a.trashinfo", "./info/b.txt.trashinfo", "./info/note.txt.trashinfo",
                    "./info/note.txt.2.trashinfo", "./info/tree.trashinfo",
                ], "the trash holds \(listing)")
            let contents = try await Command.bash(
                "cd \"$1\" && cat files/note.txt files/note.txt.2 info/note.txt.2.trashinfo info/a.trashinfo", trash
            ).check()
            #expect(
                contents.lines.filter { !$0.hasPrefix("DeletionDate=") } == [
                    "note", "other note", "[Trash Info]", "Path=other/note.txt", "[Trash Info]", "Path=tree/a",
                ], "the trash's files and info say \(contents)")
            #expect(contents.lines.filter { $0.hasPrefix("DeletionDate=20") }.count == 2)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: mount.mountpoint).sorted() == ["gone.txt", "other"])
            let refused = await Command(["mkdir", mount.path(".Trash-\(getuid())")]).run()
            #expect(!refused.succeeded, "mkdir of the trash's name in the mount: \(refused)")
        }
        try await Self.withMount(.folder, files: ["gone.txt": "x\n"]) { remote, mount in
            try await Command(["rm", mount.path("gone.txt")]).check()
            try await mount.sync()
            #expect(try FileManager.default.contentsOfDirectory(atPath: remote.folder).isEmpty)
        }
    }

    @Test("--trash on a WebDAV remote is refused at mount time")
    func trashRefusedOnWebDAV() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let remote = try await WritableRemote.start(.apache, in: scratch)
        defer { remote.stop() }
        let attempt = try await TestMount.mountCommand(
            remote: remote.argument, mountpoint: scratch.mountpoint, cacheDir: scratch.cache, options: ["--trash"]
        ).run()
        #expect(!attempt.succeeded && attempt.stderr.contains("has no trash"), "fpfs mount --trash said \(attempt)")
        #expect(!MountTable.isMounted(scratch.mountpoint))
    }

    @Test(
        "an upload the server refuses (413) is a refusal: the file shows error, fpfs sync retries it at once and fails, no deleted snapshot stays open"
    )
    func refusedUploadKeepsNoSnapshotOpen() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let remote = try await WritableRemote.start(.apache, in: scratch, maximumRequestBody: 1 << 20)
        defer { remote.stop() }
        let mount = try await TestMount.start(remote: remote.argument, in: scratch)
        defer { mount.unmount() }
        try await Command.bash("head -c 3000000 /dev/urandom > \"$1\"", mount.path("big.bin")).check()
        let refusals = { try await remote.accessLog().filter { $0.method == "PUT" && $0.status == 413 }.count }
        let deadline = ContinuousClock.now + .seconds(60)
        while try await mount.xattr("user.fpfs.state", of: "big.bin") != "error" {
            try #require(ContinuousClock.now < deadline, "big.bin did not show the refusal in 60 s")
            try await Task.sleep(for: .milliseconds(200))
        }
        let first = try await refusals()
        #expect(first >= 1)
        // Not sent again by itself at the pace of a passing failure; `fpfs sync` retries at once.
        try await Task.sleep(for: .seconds(3))
        #expect(try await refusals() == first, "the refused upload was sent again without being asked")
        // Each sync retries it at once and, once it is refused again, ends without waiting out
        // its timeout (the command's own limit here is far below --timeout).
        for _ in 0..<2 {
            let sync = try await FpfsBinary.command(["sync", mount.mountpoint], timeout: .seconds(60)).run()
            #expect(
                !sync.succeeded && !sync.timedOut && sync.stderr.contains("refused"), "fpfs sync said \(sync)")
        }
        let retried = ContinuousClock.now + .seconds(30)
        while try await refusals() < first + 2 {
            try #require(ContinuousClock.now < retried, "two runs of fpfs sync did not retry the refused upload twice")
            try await Task.sleep(for: .milliseconds(200))
        }
        let status = try await FpfsBinary.command(["status", mount.mountpoint], timeout: .seconds(20)).check()
        #expect(status.stdout.contains("413"), "fpfs status does not say why: \(status.stdout)")
        // The last attempt's snapshot may still be closing as sync returns; a leaked one stays.
        let pid = try await mount.status().pid
        let openDeleted = {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap {
                try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")
            }
            // Files made ahead for creates have no name yet by design (DECISIONS 156): `local/#…`.
            .filter { $0.hasSuffix("(deleted)") && !$0.contains("/local/#") }
        }
        var deleted = try openDeleted()
        let closing = ContinuousClock.now + .seconds(10)
        while !deleted.isEmpty, ContinuousClock.now < closing {
            try await Task.sleep(for: .milliseconds(200))
            deleted = try openDeleted()
        }
        #expect(deleted.isEmpty, "the daemon keeps deleted files open: \(deleted)")
    }
}
