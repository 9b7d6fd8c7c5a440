import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// Issue 51 item 6, second half, through the real mount: a kill -9 just after an upload's bytes
    /// reached the remote, before its answer came back, made an identical, spurious conflict copy
    /// of each such file at the next mount (DECISIONS 173; the in-process test is
    /// `InterruptedUploadTests`). `--inject-faults hang-after:…` lets the remote apply the change and
    /// loses its answer.
    @Suite("Sends interrupted after the bytes left")
    struct InterruptedSendTests {
        @Test("kill -9 after the remote took an edit and creations (one empty), then a remount: no conflict copy", arguments: [
            WritableRemote.Kind.folder, .apache,
        ])
        func killAfterTheBytesLeft(_ kind: WritableRemote.Kind) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("edited.txt", "the first version\n")
            let remote = try await WritableRemote.start(kind, in: scratch)
            defer { remote.stop() }
            let faults = "hang-after:modify:edited.txt;hang-after:create:new.txt;hang-after:create:empty.txt"
            let first = try await TestMount.start(
                remote: remote.argument, in: scratch, options: ["--inject-faults", faults, "--poll-interval", "0"])
            defer { first.unmount() }
            try await Command(["cat", first.path("edited.txt")]).check()
            try await Command.bash(
                "echo 'the second version, here' > \"$1\" && echo 'a new file' > \"$2\" && : > \"$3\"",
                first.path("edited.txt"), first.path("new.txt"), first.path("empty.txt")
            ).check()
            // Both changes are on the remote while their answers hang.
            let second = try await Self.killOnceArrived(first, remount: remote.remount(in: scratch)) {
                let edited = try? String(contentsOfFile: remote.folder + "/edited.txt", encoding: .utf8)
                let new = try? String(contentsOfFile: remote.folder + "/new.txt", encoding: .utf8)
                return edited == "the second version, here\n" && new == "a new file\n"
                    && FileManager.default.fileExists(atPath: remote.folder + "/empty.txt")
            }
            defer { second.unmount() }
            try await second.sync()
            for folder in [second.mountpoint, remote.folder] {
                let names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
                #expect(names == ["edited.txt", "empty.txt", "new.txt"], "\(folder) holds \(names): \(second.logTail())")
            }
            #expect(
                try String(contentsOfFile: second.path("edited.txt"), encoding: .utf8) == "the second version, here\n")
            #expect(try String(contentsOfFile: second.path("new.txt"), encoding: .utf8) == "a new file\n")
        }

        /// A rename whose MOVE the server made while its answer was lost, then kill -9: the next
        /// mount found nothing at the old path, took the file for deleted on the remote, made it
        /// again at the new name and met itself there, a conflict copy beside a file of the old
        /// version (the checker, seed 3012 on Apache; DECISIONS 281). A folder's move too.
        @Test("kill -9 after the remote took a rename, then a remount: no conflict copy, nothing back", arguments: [
            WritableRemote.Kind.folder, .apache,
        ], [false, true])
        func killAfterARenameLeft(_ kind: WritableRemote.Kind, movesAFolder: Bool) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("old.txt", "the file\n")
            try scratch.writeRemote("folder/inside.txt", "inside\n")
            let remote = try await WritableRemote.start(kind, in: scratch)
            defer { remote.stop() }
            let (from, to) = movesAFolder ? ("folder", "renamed") : ("old.txt", "new.txt")
            let first = try await TestMount.start(
                remote: remote.argument, in: scratch,
                options: ["--inject-faults", "hang-after:modify:\(to)", "--poll-interval", "0"])
            defer { first.unmount() }
            try await Command.bash(
                "cd \"$1\" && cat old.txt folder/inside.txt > /dev/null && mv \"$2\" \"$3\"", first.mountpoint, from, to
            ).check()
            let second = try await Self.killOnceArrived(first, remount: remote.remount(in: scratch)) {
                FileManager.default.fileExists(atPath: remote.folder + "/" + to)
            }
            defer { second.unmount() }
            try await second.sync()
            for root in [second.mountpoint, remote.folder] {
                let found = try await Command.bash("cd \"$1\" && find . -mindepth 1 | sort", root).check()
                let expected = movesAFolder
                    ? ["./old.txt", "./renamed", "./renamed/inside.txt"] : ["./folder", "./folder/inside.txt", "./new.txt"]
                #expect(found.lines == expected, "\(root) holds \(found.lines): \(second.logTail())")
            }
            let file = movesAFolder ? "old.txt" : "new.txt"
            #expect(try String(contentsOfFile: second.path(file), encoding: .utf8) == "the file\n")
            let inside = (movesAFolder ? "renamed" : "folder") + "/inside.txt"
            #expect(try String(contentsOfFile: second.path(inside), encoding: .utf8) == "inside\n")
        }

        /// Waits until the remote holds what `arrived` looks for (the sends' answers hang), kills
        /// the daemon with SIGKILL, clears its mount and mounts again on the same cache with
        /// `remount`.
        static func killOnceArrived(
            _ first: TestMount, remount: () async throws -> TestMount, arrived: () async throws -> Bool
        ) async throws -> TestMount {
            var done = false
            for _ in 0..<200 where !done {
                done = try await arrived()
                if !done { try await Task.sleep(for: .milliseconds(100)) }
            }
            try #require(done, "the sends never reached the remote: \(first.logTail())")
            let daemon = try #require(first.daemon)
            daemon.send(SIGKILL)
            #expect(await daemon.waitForExit(timeout: .seconds(10)), "the daemon survived SIGKILL")
            first.unmount()
            return try await remount()
        }
    }
}

extension WritableRemote {
    /// A mount of this remote on `scratch`'s cache folder, without change rounds.
    func remount(in scratch: Scratch) -> () async throws -> TestMount {
        { try await TestMount.start(remote: self.argument, in: scratch, options: ["--poll-interval", "0"]) }
    }
}
