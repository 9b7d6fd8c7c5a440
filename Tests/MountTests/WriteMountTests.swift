import Foundation
import TestServers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// Issue 6 through the real binary: ordinary tools write through the mount, every change
    /// returns at once and reaches the remote (a folder, or Apache mod_dav) after `fpfs sync`;
    /// offline changes, a kill -9 after fsync and a conflicting remote edit lose nothing.
    @Suite("Writes through the mount")
    struct WriteMountTests {
        /// A source tree to copy in: nested folders, small files, a 3 MiB file, awkward names, and
        /// (where the remote holds them) a symlink.
        static func makeSource(at path: String, symlink: Bool) throws {
            let manager = FileManager.default
            try manager.createDirectory(atPath: path + "/a/b c", withIntermediateDirectories: true)
            for index in 0..<30 {
                let bytes = (0..<(index * 997)).map { UInt8(truncatingIfNeeded: $0 &* (index + 3)) }
                try Data(bytes).write(to: URL(fileURLWithPath: path + "/a/file-\(index).bin"))
            }
            try PatternFile.write(to: path + "/a/b c/big file.bin", size: 3 << 20, seed: 5)
            try Data("ünïcödé\n".utf8).write(to: URL(fileURLWithPath: path + "/a/b c/ünïcödé.txt"))
            try Data().write(to: URL(fileURLWithPath: path + "/empty"))
            if symlink { try manager.createSymbolicLink(atPath: path + "/a/link", withDestinationPath: "file-1.bin") }
        }

        /// Runs `body` against a mount of a fresh remote of `kind` holding `files` (name: text);
        /// unmounts and removes everything afterwards, whatever happens.
        static func withMount(
            _ kind: WritableRemote.Kind, files: [String: String] = [:], options: [String] = [],
            _ body: (WritableRemote, TestMount) async throws -> Void
        ) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            for (name, text) in files { try scratch.writeRemote(name, text) }
            let remote = try await WritableRemote.start(kind, in: scratch)
            defer { remote.stop() }
            let mount = try await TestMount.start(remote: remote.argument, in: scratch, options: options)
            defer { mount.unmount() }
            do {
                try await body(remote, mount)
            } catch {
                Issue.record("the daemon's log, at the failure:\n\(mount.logTail())")
                throw error
            }
        }

        @Test(
            "cp -a, tar -x, rsync -a, git and sqlite3 work, and the remote ends with the same tree",
            arguments: WritableRemote.Kind.writeTested)
        func toolsReachTheRemote(_ kind: WritableRemote.Kind) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let source = scratch.path + "/source"
            try Self.makeSource(at: source, symlink: kind == .folder)
            let repository = scratch.path + "/repository"
            try await Command.bash(
                """
                set -e
                setfattr -n user.origin -v "the source" "$2/a/file-1.bin"
                git init -q "$1" && cp -r "$2" "$1/tree" && cd "$1"
                git add . && git -c user.name=t -c user.email=t@t commit -qm initial
                tar -cf "$3" -C "$2" .
                """, repository, source, scratch.path + "/source.tar"
            ).check()
            let remote = try await WritableRemote.start(kind, in: scratch)
            defer { remote.stop() }
            let mount = try await TestMount.start(remote: remote.argument, in: scratch)
            defer { mount.unmount() }

            let work = mount.path("work")
            let steps = try await Command.bash(
                """
                set -e
                mkdir "$1" && cd "$1"
                cp -a "$2" copied
                mkdir tarred && tar -xf "$4" -C tarred
                rsync -aX "$2/" rsynced/
                git clone -q "$3" cloned
                git -C cloned fsck --strict
                echo "a change" >> cloned/tree/a/file-1.bin
                git -C cloned -c user.name=t -c user.email=t@t commit -qam "a change"
                git -C cloned fsck --strict
                sqlite3 db.sqlite "CREATE TABLE t(a, b); INSERT INTO t VALUES (1, randomblob(50000));
                  INSERT INTO t SELECT a + 1, randomblob(3000) FROM t; INSERT INTO t SELECT a + 2, b FROM t;"
                sqlite3 db.sqlite "PRAGMA integrity_check; SELECT count(*) FROM t;"
                """, work, source, repository, scratch.path + "/source.tar", timeout: .seconds(300)
            ).check()
            #expect(steps.lines.suffix(2) == ["ok", "4"], "sqlite3 said \(steps.stdout)")
            for copy in ["work/copied/a/file-1.bin", "work/rsynced/a/file-1.bin"] {
                #expect(
                    try await mount.xattr("user.origin", of: copy) == "the source", "\(copy) lost its user attribute")
            }

            try await mount.sync()
            // Apache keeps the copies' user attributes (dead properties) in .DAV folders of its own.
            let difference = await Command(
                ["diff", "-r", "--no-dereference", "-x", ".DAV", work, remote.folder + "/work"], timeout: .seconds(120)
            ).run()
            #expect(difference.succeeded, "the remote differs from the mount after fpfs sync: \(difference)")
            let fsck = await Command([
                "git", "-c", "safe.directory=*", "-C", remote.folder + "/work/cloned", "fsck", "--strict",
            ]).run()
            #expect(fsck.succeeded, "git fsck of the remote's copy: \(fsck)")
            if kind == .folder {
                // A folder keeps modes and times: cp -a's must be there too.
                let listing = "cd \"$1\" && find . -type f -printf '%p %m %T@\\n' | sort"
                let here = try await Command.bash(listing, work + "/copied").check()
                let there = try await Command.bash(listing, remote.folder + "/work/copied").check()
                LineComparison.expectEqual(there.lines, here.lines, "modes and times on the remote")
            }
        }

        @Test(
            "changes made while the remote is away return at once and reach it when it is back",
            arguments: WritableRemote.Kind.writeTested)
        func offlineChanges(_ kind: WritableRemote.Kind) async throws {
            let names = ["edit.txt", "rename.txt", "delete.txt", "keep.txt"]
            let files = Dictionary(uniqueKeysWithValues: names.map { ($0, "\($0) as the server had it\n") })
            try await Self.withMount(kind, files: files, options: ["--remote-timeout", "3"]) { remote, mount in
                try await Command(["cat", mount.path("edit.txt")]).check()

                try remote.goAway()
                let changes = try await Command.bash(
                    """
                    set -e
                    cd "$1"
                    echo "created offline" > created.txt
                    echo "edited offline" >> edit.txt
                    mv rename.txt renamed.txt
                    rm delete.txt
                    mkdir folder && echo "in a new folder" > folder/inner.txt
                    cat created.txt edit.txt folder/inner.txt
                    ls
                    """, mount.mountpoint, timeout: .seconds(20)
                ).check()
                #expect(changes.duration < .seconds(10), "offline changes took \(changes.duration)")
                #expect(
                    changes.lines == [
                        "created offline", "edit.txt as the server had it", "edited offline", "in a new folder",
                        "created.txt", "edit.txt", "folder", "keep.txt", "renamed.txt",
                    ])
                #expect(try await mount.status().uploads.pending > 0)
                let waiting = try await FpfsBinary.command(["sync", mount.mountpoint, "--timeout", "2"]).run()
                #expect(
                    !waiting.succeeded && waiting.stderr.contains("have not reached the remote"),
                    "fpfs sync with the remote away: \(waiting)")

                try await remote.comeBack()
                try await mount.sync()
                let served = try await Command.bash(
                    "cd \"$1\" && find . -type f | sort && cat edit.txt created.txt folder/inner.txt renamed.txt",
                    remote.folder
                ).check()
                #expect(
                    served.lines == [
                        "./created.txt", "./edit.txt", "./folder/inner.txt", "./keep.txt", "./renamed.txt",
                        "edit.txt as the server had it", "edited offline", "created offline", "in a new folder",
                        "rename.txt as the server had it",
                    ])
            }
        }

        @Test(
            "a write fsynced while the remote is away survives kill -9 of the daemon",
            arguments: WritableRemote.Kind.writeTested)
        func fsyncedWriteSurvivesKill(_ kind: WritableRemote.Kind) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("old.txt", "old\n")
            let remote = try await WritableRemote.start(kind, in: scratch)
            defer { remote.stop() }
            let first = try await TestMount.start(
                remote: remote.argument, in: scratch, options: ["--remote-timeout", "3"])
            defer { first.unmount() }
            try await Command(["ls", first.mountpoint]).check()
            try remote.goAway()
            try await Command.bash(
                "head -c 2000000 /dev/urandom > \"$2\" && dd if=\"$2\" of=\"$1\" bs=64k conv=fsync status=none",
                first.path("precious.bin"), scratch.path + "/precious.bin"
            ).check()
            let daemon = try #require(first.daemon)
            daemon.send(SIGKILL)
            #expect(await daemon.waitForExit(timeout: .seconds(10)), "the daemon survived SIGKILL")

            try await remote.comeBack()
            let second = try await TestMount.start(remote: remote.argument, in: scratch)
            defer { second.unmount() }
            try await second.sync()
            for copy in [second.path("precious.bin"), remote.folder + "/precious.bin"] {
                let same = await Command(["cmp", scratch.path + "/precious.bin", copy]).run()
                #expect(same.succeeded, "\(copy) lost the fsynced bytes: \(same)")
            }
        }

        @Test(
            "a file changed on the remote and through the mount ends as two files",
            arguments: WritableRemote.Kind.writeTested)
        func conflictKeepsBoth(_ kind: WritableRemote.Kind) async throws {
            try await Self.withMount(kind, files: ["notes.txt": "the original\n"]) { remote, mount in
                try await Command(["cat", mount.path("notes.txt")]).check()
                try Data("changed on the remote, longer\n".utf8).write(
                    to: URL(fileURLWithPath: remote.folder + "/notes.txt"))
                try await Command.bash("echo 'changed here' > \"$1\"", mount.path("notes.txt")).check()
                try await mount.sync()

                let names = try FileManager.default.contentsOfDirectory(atPath: remote.folder).sorted()
                #expect(names.count == 2, "the remote holds \(names)")
                let copy = try #require(names.first { $0.hasPrefix("notes (conflict ") && $0.hasSuffix(").txt") })
                let original = try String(contentsOfFile: remote.folder + "/notes.txt", encoding: .utf8)
                let kept = try String(contentsOfFile: remote.folder + "/" + copy, encoding: .utf8)
                #expect(original == "changed on the remote, longer\n")
                #expect(kept == "changed here\n")
                let seen = try await Command.bash("cat \"$1/notes.txt\" \"$1/$2\"", mount.mountpoint, copy).check()
                #expect(seen.lines == ["changed on the remote, longer", "changed here"])
                #expect(try FileManager.default.contentsOfDirectory(atPath: mount.mountpoint).sorted() == names)
                #expect(try await mount.xattr("user.fpfs.state", of: copy) == "conflict")
            }
        }

        @Test(
            "fio verifies sequential and random writes, and stress-ng's file stressors pass",
            arguments: WritableRemote.Kind.writeTested)
        func fioAndStressNg(_ kind: WritableRemote.Kind) async throws {
            try await Self.withMount(kind) { remote, mount in
                try await Command.bash(
                    """
                    set -e
                    cd "$1"
                    for pattern in write randwrite; do
                      fio --name="$pattern" --directory=. --rw="$pattern" --size=24m --bs=64k --ioengine=psync \
                        --verify=crc32c --do_verify=1 --verify_fatal=1 --end_fsync=1 --output-format=terse >/dev/null
                    done
                    mkdir stress
                    stress-ng --temp-path stress --timeout 15s --verify --rename 1 --hdd 1 --hdd-bytes 8m \
                      --seek 1 --seek-size 8m --metrics-brief --quiet
                    """, mount.mountpoint, timeout: .seconds(240)
                ).check()
                try await mount.sync()
                let difference = await Command(["diff", "-r", mount.mountpoint, remote.folder], timeout: .seconds(60))
                    .run()
                #expect(difference.succeeded, "the remote differs after fio and stress-ng: \(difference)")
            }
        }

        @Test("a full cache disk gives ENOSPC and loses nothing already written")
        func fullCacheDisk() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try FileManager.default.createDirectory(atPath: scratch.cache, withIntermediateDirectories: true)
            try await Command(["mount", "-t", "tmpfs", "-o", "size=40m", "fpfs-test-cache", scratch.cache]).check()
            defer { _ = Command(["umount", "-l", scratch.cache], timeout: .seconds(20)).runBlocking() }
            let mount = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { mount.unmount() }
            try await Command.bash(
                "head -c 1000000 /dev/urandom | tee \"$2\" > \"$1\"", mount.path("kept.bin"), scratch.path + "/kept.bin"
            ).check()
            let full = await Command.bash(
                "dd if=/dev/zero of=\"$1\" bs=1M count=64 status=none", mount.path("too-big.bin")
            ).run()
            #expect(!full.succeeded && full.stderr.contains("No space left on device"), "dd said \(full)")
            try await Command(["rm", mount.path("too-big.bin")]).check()
            try await mount.sync()
            for copy in [mount.path("kept.bin"), scratch.remote + "/kept.bin"] {
                let same = await Command(["cmp", scratch.path + "/kept.bin", copy]).run()
                #expect(same.succeeded, "\(copy) lost bytes: \(same)")
            }
        }

        @Test("symlinks where the remote has none fail with ENOTSUP; hard links with EPERM")
        func refusedLinks() async throws {
            try await Self.withMount(.apache, files: ["target.txt": "target\n"]) { _, mount in
                let symlink = await Command(["ln", "-s", "target.txt", mount.path("link")]).run()
                #expect(
                    !symlink.succeeded && symlink.stderr.contains("Operation not supported"), "ln -s said \(symlink)")
                let hard = await Command(["ln", mount.path("target.txt"), mount.path("hard")]).run()
                #expect(!hard.succeeded && hard.stderr.contains("Operation not permitted"), "ln said \(hard)")
            }
        }
    }
}
