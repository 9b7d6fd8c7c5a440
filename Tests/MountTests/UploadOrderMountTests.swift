import Foundation
import TestServers
import Testing

extension MountTests {
    /// Issue 51, items 8, 3 and 2 through the real binary: journals the uploader could not drain
    /// (a folder's mode and times set after filling it, a move into a folder renamed after it, a
    /// swap through a temporary name), and a rename racing a remote deletion.
    @Suite("Upload order through the mount")
    struct UploadOrderMountTests {
        static let kinds: [WritableRemote.Kind] = [.folder, .apache]

        /// `fpfs sync` with a bound that a working uploader meets by far: a stopped queue fails.
        static func sync(_ mount: TestMount) async throws {
            try await mount.sync(seconds: 60)
            #expect(try await mount.status().uploads.pending == 0)
        }

        static func expectSameTree(_ remote: WritableRemote, _ mount: TestMount, _ folder: String) async {
            let difference = await Command(
                ["diff", "-r", "--no-dereference", "-x", ".DAV", mount.path(folder), remote.folder + "/" + folder],
                timeout: .seconds(120)
            ).run()
            #expect(difference.succeeded, "the remote differs from the mount after fpfs sync: \(difference)")
        }

        @Test("cp -a of a 900-entry tree and tar -x of 450 entries drain", arguments: kinds)
        func copiedTreesDrain(_ kind: WritableRemote.Kind) async throws {
            // The remote is away while the trees are copied in, so that the journal holds them
            // whole, coalesced, as a fast copy on a loaded machine leaves it.
            try await MountTests.WriteMountTests.withMount(kind, options: ["--remote-timeout", "3"]) { remote, mount in
                try await Command(["ls", mount.mountpoint]).check()
                try remote.goAway()
                let source = remote.scratch.path + "/source"
                try await Command.bash(
                    """
                    set -e
                    for d in $(seq 1 30); do
                      mkdir -p "$1/d$d/sub"
                      for f in $(seq 1 14); do echo "$d $f" > "$1/d$d/f$f"; echo "$f" > "$1/d$d/sub/g$f"; done
                      chmod 750 "$1/d$d"; touch -d 2020-01-0$(( d % 9 + 1 )) "$1/d$d" "$1/d$d/sub"
                    done
                    [ "$(find "$1" | wc -l)" -ge 900 ]
                    tar -cf "$2" -C "$1" d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14
                    cp -a "$1" "$3/copied"
                    mkdir "$3/tarred" && tar -xf "$2" -C "$3/tarred"
                    """, source, remote.scratch.path + "/source.tar", mount.mountpoint, timeout: .seconds(300)
                ).check()
                try await remote.comeBack()
                try await Self.sync(mount)
                await Self.expectSameTree(remote, mount, "copied")
                await Self.expectSameTree(remote, mount, "tarred")
            }
        }

        @Test("a move into a folder renamed after it drains", arguments: kinds)
        func moveIntoARenamedFolder(_ kind: WritableRemote.Kind) async throws {
            try await MountTests.WriteMountTests.withMount(kind) { remote, mount in
                try await Command.bash("mkdir \"$1/old\" && echo inside > \"$1/old/file\"", mount.mountpoint).check()
                try await Self.sync(mount)
                try await Command.bash(
                    "cd \"$1\" && mkdir new && mv old new/moved && mv new new2", mount.mountpoint
                ).check()
                try await Self.sync(mount)
                let there = try await Command.bash("cd \"$1\" && find . | sort && cat new2/moved/file", remote.folder)
                    .check()
                #expect(
                    there.lines.filter { !$0.contains(".DAV") } == [
                        ".", "./new2", "./new2/moved", "./new2/moved/file", "inside",
                    ])
            }
        }

        @Test("a swap through a temporary name swaps on the remote, without conflict copies", arguments: kinds)
        func swapThroughATemporaryName(_ kind: WritableRemote.Kind) async throws {
            try await MountTests.WriteMountTests.withMount(kind, files: ["A": "was A\n", "B": "was B\n"]) {
                remote, mount in
                try await Command.bash(
                    "cd \"$1\" && mkdir D E && echo d > D/in && echo e > E/in", mount.mountpoint
                ).check()
                try await Self.sync(mount)
                try await Command.bash(
                    "cd \"$1\" && mv A T && mv B A && mv T B && mv D X && mv E D && mv X E", mount.mountpoint
                ).check()
                try await Self.sync(mount)
                let listing = "cd \"$1\" && find . -not -path '*.DAV*' | sort && cat A B D/in E/in"
                let expected = [".", "./A", "./B", "./D", "./D/in", "./E", "./E/in", "was B", "was A", "e", "d"]
                #expect(try await Command.bash(listing, remote.folder).check().lines == expected)
                #expect(try await Command.bash(listing, mount.mountpoint).check().lines == expected)
            }
        }

        @Test("fpfs status shows a change stuck behind a refused folder creation, with what it waits for")
        func stuckChangesInStatus() async throws {
            let options = ["--inject-faults", "error=featureUnsupported:create:refused"]
            try await MountTests.WriteMountTests.withMount(.folder, options: options) { _, mount in
                try await Command.bash(
                    "mkdir \"$1/refused\" && echo waits > \"$1/refused/inside.txt\"", mount.mountpoint
                ).check()
                let sync = try await FpfsBinary.command(["sync", mount.mountpoint, "--timeout", "3"]).run()
                #expect(!sync.succeeded)
                let text = try await FpfsBinary.command(["status", mount.mountpoint]).check().stdout
                #expect(
                    text.contains("inside.txt") && text.contains("stuck: waits for the creation of refused"),
                    "fpfs status said: \(text)")
                let json = try await FpfsBinary.command(["status", mount.mountpoint, "--json"]).check()
                let status = try #require(try JSONSerialization.jsonObject(with: json.stdoutData) as? [String: Any])
                let first = (status["uploads"] as? [String: Any])?["first"] as? [[String: Any]] ?? []
                let inside = try #require(first.first { $0["name"] as? String == "inside.txt" }, "\(json.stdout)")
                #expect(inside["isStuck"] as? Bool == true)
                #expect(inside["waitsFor"] as? String == "the creation of refused")
            }
        }

        @Test("a rename racing a remote deletion neither invents bytes nor loses written ones", arguments: kinds)
        func renameRacingARemoteDeletion(_ kind: WritableRemote.Kind) async throws {
            let files = [
                "read.txt": "important\n", "cloud.txt": "never read\n", "moved.txt": "moved there\n",
                "written.txt": "old\n",
            ]
            try await MountTests.WriteMountTests.withMount(kind, files: files) { remote, mount in
                try await Command.bash(
                    "cd \"$1\" && ls >/dev/null && cat read.txt moved.txt >/dev/null && echo 'written here' > written.txt",
                    mount.mountpoint
                ).check()
                try await Self.sync(mount)
                try await Command.bash(
                    """
                    set -e
                    rm "$1/read.txt" "$1/cloud.txt" "$1/written.txt"
                    mv "$1/moved.txt" "$1/moved-remotely.txt"
                    cd "$2"
                    mv read.txt read-local.txt; mv cloud.txt cloud-local.txt; mv moved.txt moved-local.txt
                    mv written.txt written-local.txt
                    """, remote.folder, mount.mountpoint
                ).check()
                try await Self.sync(mount)
                try await Self.sync(mount)
                let listing = "cd \"$1\" && for f in $(ls | sort); do echo \"$f: $(cat $f)\"; done"
                let there = try await Command.bash(listing, remote.folder).check().lines
                // What the remote deleted stays deleted, unless its bytes were written here; what
                // it renamed keeps its bytes, under either name (a remote whose identifiers
                // survive a rename takes the local one).
                #expect(
                    there == ["moved-remotely.txt: moved there", "written-local.txt: written here"]
                        || there == ["moved-local.txt: moved there", "written-local.txt: written here"],
                    "the remote holds \(there)")
                var here: [String] = []
                for _ in 0..<25 {
                    _ = try await FpfsBinary.command(["signal", mount.mountpoint]).run()
                    here = try await Command.bash(listing, mount.mountpoint).check().lines
                    if here == there { break }
                    try await Task.sleep(for: .milliseconds(200))
                }
                #expect(here == there, "the mount shows \(here)")
            }
        }
    }
}
