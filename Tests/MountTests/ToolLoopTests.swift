import Foundation
import Testing

extension MountTests {
    /// Issue 51, "What to build" 3: ordinary tools in loops on a folder remote and on Apache,
    /// each iteration beside a reader streaming a large file that is not local yet; after each
    /// iteration `fpfs sync` drains and the remote equals the mount, byte for byte. One iteration
    /// here; `FPFS_TOOL_ITERATIONS` (scripts/soak.sh: 20) runs more.
    @Suite("Real tools in loops")
    struct ToolLoopTests {
        enum Tool: String, CaseIterable, CustomStringConvertible, Sendable {
            case git, tarCreate = "tar -c and tar -S", tarExtract = "tar -x", rsync = "rsync -a"
            case copy = "cp -a", sqlite = "sqlite3"
            var description: String { rawValue }
        }

        static let kinds: [WritableRemote.Kind] = [.folder, .apache]
        /// Tools that fail on the code as it is, with the issue-51 item they meet; they run as known
        /// issues until `FPFS_CHECK_STRICT=1` (or until the item is fixed and the tool leaves this list).
        static let knownIssues: [Tool: String] = [:]

        static var iterations: Int {
            Int(ProcessInfo.processInfo.environment["FPFS_TOOL_ITERATIONS"] ?? "") ?? 1
        }

        @Test("a tool run again and again leaves the remote equal to the mount", arguments: Tool.allCases, kinds)
        func loop(_ tool: Tool, _ kind: WritableRemote.Kind) async throws {
            guard let issue = Self.knownIssues[tool],
                ProcessInfo.processInfo.environment["FPFS_CHECK_STRICT"] != "1"
            else {
                try await Self.run(tool, on: kind)
                return
            }
            await withKnownIssue("issue 51: \(issue)", isIntermittent: true) {
                try await Self.run(tool, on: kind)
            }
        }

        static func run(_ tool: Tool, on kind: WritableRemote.Kind) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let source = scratch.path + "/source"
            try WriteMountTests.makeSource(at: source, symlink: kind == .folder)
            try await Command.bash(
                """
                set -e
                git init -q "$1" && cp -r "$2" "$1/tree" && cd "$1"
                git add . && git -c user.name=t -c user.email=t@t commit -qm initial
                for round in 1 2 3; do
                  head -c 200000 /dev/urandom > "tree/round-$round.bin" && echo "$round" >> tree/a/file-1.bin
                  git add . && git -c user.name=t -c user.email=t@t commit -qm "round $round" && git repack -q
                done
                tar -cf "$3" -C "$2" .
                cp -a "$2" "$4/seed"
                """, scratch.path + "/repository", source, scratch.path + "/source.tar", scratch.remote
            ).check()
            try PatternFile.write(to: scratch.remote + "/stream.bin", size: 48 << 20, seed: 51)
            let expected = try await Command(["sha256sum", scratch.remote + "/stream.bin"]).check().stdout.prefix(64)

            let remote = try await WritableRemote.start(kind, in: scratch)
            defer { remote.stop() }
            let mount = try await TestMount.start(remote: remote.argument, in: scratch)
            defer { mount.unmount() }
            let binary = try FpfsBinary.path()
            for iteration in 1...iterations {
                do {
                    try await FpfsBinary.command(["evict", mount.path("stream.bin"), mount.path("seed")]).check()
                    async let streamed = Command(["sha256sum", mount.path("stream.bin")], timeout: .seconds(300)).run()
                    let work = mount.path("run-\(iteration)")
                    let output = await Command.bash(
                        script(for: tool), work, source, scratch.path + "/repository", scratch.path + "/source.tar",
                        mount.path("seed"), scratch.path + "/archives-\(iteration)", binary,
                        timeout: .seconds(300)
                    ).run()
                    let stream = await streamed
                    guard output.succeeded else { throw MountTestFailure("\(tool): \(output)\n\(output.stdout)") }
                    guard stream.succeeded, stream.stdout.prefix(64) == expected else {
                        throw MountTestFailure("the streaming reader beside \(tool) read other bytes: \(stream)")
                    }
                    try await mount.sync()
                    // Apache keeps dead properties in .DAV folders of its own.
                    let difference = await Command(
                        ["diff", "-r", "--no-dereference", "-x", ".DAV", mount.mountpoint, remote.folder],
                        timeout: .seconds(300)
                    ).run()
                    guard difference.succeeded else {
                        throw MountTestFailure(
                            "the remote differs from the mount after fpfs sync: \(difference)\n"
                                + difference.stdout.prefix(3000))
                    }
                    print("tool loop: \(tool) on \(kind), iteration \(iteration) of \(iterations) passed")
                } catch {
                    print("tool loop summary: \(tool) on \(kind): failed at iteration \(iteration) of \(iterations)")
                    Issue.record(
                        "\(tool), iteration \(iteration) of \(iterations), on \(kind): the log:\n\(mount.logTail())")
                    throw error
                }
            }
            print("tool loop summary: \(tool) on \(kind): \(iterations) iterations, 0 failures")
        }

        /// The tool's steps: $1 its folder on the mount, $2 the source tree, $3 a git repository
        /// with several packs, $4 a tar of the source, $5 the source on the remote (evicted, so
        /// not local), $6 a folder for archives outside the mount, $7 the fpfs binary.
        static func script(for tool: Tool) -> String {
            let steps: String
            switch tool {
            case .git:
                steps = """
                    git clone -q "$3" cloned && git -C cloned fsck --strict
                    echo "a change" >> cloned/tree/a/file-2.bin
                    git -C cloned -c user.name=t -c user.email=t@t commit -qam "a change"
                    git -C cloned gc -q && git -C cloned fsck --strict
                    test "$(git -C cloned rev-list --count HEAD)" = 5
                    """
            case .tarCreate:
                steps = """
                    mkdir -p "$6/plain" "$6/sparse"
                    tar -cf "$6/plain.tar" -C "$5" . && tar -xf "$6/plain.tar" -C "$6/plain" && diff -r "$2" "$6/plain"
                    fpfs_evict "$5"
                    tar -cSf "$6/sparse.tar" -C "$5" . && tar -xf "$6/sparse.tar" -C "$6/sparse"
                    diff -r "$2" "$6/sparse"
                    mkdir tree && tar -cf - -C "$2" . | tar -xf - -C tree
                    diff -r "$2" tree
                    """
            case .tarExtract:
                steps = """
                    mkdir tree && tar -xf "$4" -C tree && diff -r "$2" tree
                    tar -xf "$4" -C tree && diff -r "$2" tree
                    """
            case .rsync:
                steps = """
                    rsync -a "$2/" tree/ && diff -r "$2" tree
                    echo "changed" >> "tree/a/file-3.bin" && rsync -a --delete "$2/" tree/ && diff -r "$2" tree
                    """
            case .copy:
                steps = """
                    cp -a "$2" tree && diff -r "$2" tree
                    cp -a "$5" remote-copy && diff -r "$2" remote-copy
                    """
            case .sqlite:
                steps = """
                    sqlite3 db.sqlite "CREATE TABLE t(a, b); INSERT INTO t VALUES (1, randomblob(50000));
                      INSERT INTO t SELECT a + 1, randomblob(3000) FROM t; INSERT INTO t SELECT a + 2, b FROM t;"
                    for round in 1 2 3 4 5; do
                      sqlite3 db.sqlite "BEGIN; INSERT INTO t SELECT a + 10 * $round, randomblob(700) FROM t LIMIT 20;
                        DELETE FROM t WHERE a % 7 = $round; COMMIT;"
                    done
                    test "$(sqlite3 db.sqlite 'PRAGMA integrity_check;')" = ok
                    """
            }
            return """
                set -e
                fpfs="$7"
                fpfs_evict() { "$fpfs" evict "$1" >/dev/null; }
                mkdir "$1" && cd "$1"
                \(steps)
                """
        }
    }
}
