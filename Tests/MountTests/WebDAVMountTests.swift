import Foundation
import TestServers
import Testing

extension MountTests {
    /// Issues 2 and 3 over WebDAV: real servers (Apache mod_dav, rclone serve webdav, and the
    /// Nextcloud-like nextcloud-webdav.py, which names items by fileid) on 127.0.0.1
    /// serve the fixture tree, and the mount must show it exactly, fetch only the blocks a read
    /// touches, keep no more requests in flight at the server than the pipeline depth, refuse
    /// indexers, serve what it has when the server is gone, and refuse a wrong password.
    @Suite("WebDAV remotes")
    struct WebDAVMountTests {
        @Test("the mount equals the served tree", arguments: WebDAVTestServer.Kind.allCases)
        func sameAsServed(_ kind: WebDAVTestServer.Kind) async throws {
            let tree = try await WebDAVFixtureTree.path()
            let server = try await WebDAVTestServer.start(kind, serving: URL(fileURLWithPath: tree))
            defer { server.stop() }
            let scratch = try Scratch()
            defer { scratch.remove() }
            let mount = try await TestMount.start(remote: server.remote, in: scratch)
            defer { mount.unmount() }
            for listing in TreeListing.webDAVCases {
                var expected = try await listing.lines(of: tree)
                // rclone serves control characters in names as their Unicode pictures (a tab as
                // U+2409), whatever its encoding flags say; the mount shows what the server says.
                if kind == .rclone { expected = expected.map { $0.replacingOccurrences(of: "\t", with: "\u{2409}") } }
                let actual = try await listing.lines(of: mount.mountpoint)
                #expect(expected.count > FixtureTree.manyCount, "the \(listing) of the tree looks too short")
                LineComparison.expectEqual(actual, expected, "\(kind): \(listing)")
            }
        }

        @Test("a walk of the tree, with folders listed ahead of it, asks the server for each folder once")
        func walkListsEachFolderOnce() async throws {
            let tree = try await WebDAVFixtureTree.path()
            let server = try await WebDAVTestServer.start(.apache, serving: URL(fileURLWithPath: tree))
            defer { server.stop() }
            let scratch = try Scratch()
            defer { scratch.remove() }
            let mount = try await TestMount.start(
                remote: server.remote, in: scratch, options: ["--poll-interval", "0"])
            defer { mount.unmount() }
            let walked = try await Command(["find", mount.mountpoint, "-type", "d"]).check()
            let served = try await Command(["find", tree, "-type", "d"]).check()
            let folders = served.stdout.split(separator: "\n").count
            #expect(walked.stdout.split(separator: "\n").count == folders)
            let propfinds = try await server.accessLog().filter { $0.method == "PROPFIND" }
            var perPath: [String: Int] = [:]
            for request in propfinds { perPath[request.path, default: 0] += 1 }
            // The root is asked for three times: itself and the server's features at start, then
            // its listing.
            let twice = perPath.filter { $0.value > ($0.key == "/dav/" ? 3 : 1) }
            #expect(twice.isEmpty, "folders listed more than once: \(twice)")
            #expect(perPath.count == folders, "\(perPath.count) folders listed of \(folders)")
        }

        @Test("4 KiB at 900 MiB makes the server send at most two blocks; a whole read then sends the rest once")
        func farReadSendsTwoBlocks() async throws {
            let tree = try await WebDAVFixtureTree.path()
            let server = try await WebDAVTestServer.start(.apache, serving: URL(fileURLWithPath: tree))
            defer { server.stop() }
            let scratch = try Scratch()
            defer { scratch.remove() }
            let mount = try await TestMount.start(remote: server.remote, in: scratch)
            defer { mount.unmount() }
            let file = FixtureTree.bigFile
            let block: UInt64 = 64 << 10  // the default --block-size
            let sent = { try await server.accessLog().filter { $0.method == "GET" && $0.path.hasSuffix(file) } }

            let piece = "dd if=\"$1\" bs=4096 skip=$((900 * 256)) count=1 status=none | sha256sum"
            let read = try await Command.bash(piece, mount.path(file)).check()
            let expected = try await Command.bash(piece, tree + "/" + file).check()
            #expect(
                read.stdout.prefix(64) == expected.stdout.prefix(64), "the 4 KiB at 900 MiB differ from the server's")
            let far = try await sent()
            #expect(!far.isEmpty && far.allSatisfy { $0.range != nil }, "the far read was not a range request: \(far)")
            #expect(far.reduce(0) { $0 + $1.bytesSent } <= 2 * block, "a 4 KiB read made the server send \(far)")
            #expect(try await mount.xattr("user.fpfs.state", of: file) == "partial")

            let whole = try await Command.bash("sha256sum < \"$1\"", mount.path(file), timeout: .seconds(300)).check()
            let source = try await Command.bash("sha256sum < \"$1\"", tree + "/" + file, timeout: .seconds(300)).check()
            #expect(whole.stdout.prefix(64) == source.stdout.prefix(64), "the whole file differs from the server's")
            let total = try await sent().reduce(0) { $0 + $1.bytesSent }
            #expect(
                total <= UInt64(FixtureTree.bigFileSize) + block,
                "reading the file once made the server send \(total) bytes for \(FixtureTree.bigFileSize)")
            #expect(try await mount.xattr("user.fpfs.state", of: file) == "local")
        }

        @Test("4N readers on a slow server never have more than N requests in flight there", arguments: [1, 2, 4])
        func pipelineDepthBoundsRequests(depth: Int) async throws {
            let folder = try Scratch()
            defer { folder.remove() }
            let count = 4 * depth
            for index in 0..<count {
                try folder.writeRemote("file-\(index).bin", String(repeating: "\(index % 10)", count: 128 << 10))
            }
            try folder.openRemoteToServers()
            let server = try await WebDAVTestServer.start(
                .apache, serving: URL(fileURLWithPath: folder.remote), bytesPerSecond: 256 << 10)
            defer { server.stop() }
            let mount = try await TestMount.start(
                remote: server.remote, mountpoint: folder.mountpoint, cacheDir: folder.cache,
                options: ["--pipeline-depth", String(depth)])
            defer { mount.unmount() }
            try await Command(["ls", mount.mountpoint]).check()

            let readAll = "for f in \"$1\"/file-*.bin; do cat \"$f\" > /dev/null & done; wait"
            try await Command.bash(readAll, mount.mountpoint, timeout: .seconds(120)).check()
            let gets = try await server.accessLog().filter { $0.method == "GET" }
            #expect(gets.count >= count, "\(count) readers made \(gets.count) GETs")
            #expect(
                gets.maximumConcurrency() == depth,
                "at --pipeline-depth \(depth) the server had \(gets.maximumConcurrency()) GETs in flight")
        }

        @Test("a copy of cat named updatedb gets EDEADLK and the server sends nothing")
        func indexerIsRefusedDownloads() async throws {
            let tree = try await WebDAVFixtureTree.path()
            let server = try await WebDAVTestServer.start(.apache, serving: URL(fileURLWithPath: tree))
            defer { server.stop() }
            let scratch = try Scratch()
            defer { scratch.remove() }
            let updatedb = scratch.path + "/bin/updatedb"
            try FileManager.default.createDirectory(atPath: scratch.path + "/bin", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: "/bin/cat", toPath: updatedb)
            let mount = try await TestMount.start(remote: server.remote, in: scratch)
            defer { mount.unmount() }

            let refused = await Command([updatedb, "--", mount.path(FixtureTree.mediumFile)]).run()
            #expect(refused.status != 0 && refused.stderr.contains("Resource deadlock avoided"), "\(refused)")
            #expect(
                try await server.accessLog().filter { $0.method == "GET" }.isEmpty, "a refused read reached the server")
            #expect(try await mount.xattr("user.fpfs.state", of: FixtureTree.mediumFile) == "cloud")
            let allowed = try await Command(["cat", "--", mount.path(FixtureTree.smallFile)]).check()
            #expect(allowed.stdout == FixtureTree.smallFileContents)
        }

        @Test("remounted with the server stopped: what was read is served, the rest is EHOSTDOWN, ls -lR works")
        func offlineRemount() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("read/before.txt", String(repeating: "read before\n", count: 10_000))
            try scratch.writeRemote("never/read.txt", "never read\n")
            try scratch.openRemoteToServers()
            let server = try await WebDAVTestServer.start(.rclone, serving: URL(fileURLWithPath: scratch.remote))
            defer { server.stop() }
            let mount = try await TestMount.start(remote: server.remote, in: scratch)
            defer { mount.unmount() }
            let before = try await Command(["sha256sum", "--", mount.path("read/before.txt")]).check()
            try await Command(["ls", "-lR", mount.mountpoint]).check()
            mount.unmount()
            server.stop()

            let offline = try await TestMount.start(
                remote: server.remote, in: scratch, options: ["--remote-timeout", "3"])
            defer { offline.unmount() }
            let again = try await Command(["sha256sum", "--", offline.path("read/before.txt")]).check()
            #expect(again.stdout.prefix(64) == before.stdout.prefix(64), "offline, a local file reads other bytes")
            let failed = await Command(["cat", "--", offline.path("never/read.txt")], timeout: .seconds(60)).run()
            #expect(failed.status != 0 && failed.stderr.contains("Host is down"), "offline cat gave \(failed)")
            #expect(failed.duration < .seconds(30), "offline cat took \(failed.duration)")
            let listing = try await Command(["ls", "-lR", offline.mountpoint]).check()
            #expect(listing.stdout.contains("before.txt") && listing.stdout.contains("read.txt"))
        }

        @Test("fileids: a file read before a remount is still local after it and reads the same; others fetch")
        func nextcloudRemount() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let contents = String(repeating: "named by its fileid\n", count: 1000)
            try scratch.writeRemote("folder/read.txt", contents)
            try scratch.writeRemote("folder/later.txt", "read after the remount\n")
            let server = try await WebDAVTestServer.start(.nextcloud, serving: URL(fileURLWithPath: scratch.remote))
            defer { server.stop() }
            let mount = try await TestMount.start(remote: server.remote, in: scratch)
            defer { mount.unmount() }
            #expect(try await Command(["cat", "--", mount.path("folder/read.txt")]).check().stdout == contents)
            mount.unmount()

            let again = try await TestMount.start(remote: server.remote, in: scratch)
            defer { again.unmount() }
            #expect(try await again.xattr("user.fpfs.state", of: "folder/read.txt") == "local")
            #expect(try await Command(["cat", "--", again.path("folder/read.txt")]).check().stdout == contents)
            let later = try await Command(["cat", "--", again.path("folder/later.txt")]).check()
            #expect(later.stdout == "read after the remount\n")
        }

        @Test("fileids: a folder and files made, written and moved through the mount reach the server as such")
        func nextcloudWrites() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("keep/old.txt", "old\n")
            let server = try await WebDAVTestServer.start(.nextcloud, serving: URL(fileURLWithPath: scratch.remote))
            defer { server.stop() }
            let mount = try await TestMount.start(remote: server.remote, in: scratch)
            defer { mount.unmount() }
            let changes = """
                set -e
                mkdir "$1/new"
                echo hello > "$1/new/a.txt"
                mv "$1/keep" "$1/kept"
                mv "$1/new/a.txt" "$1/kept/a.txt"
                """
            try await Command.bash(changes, mount.mountpoint).check()
            try await FpfsBinary.command(["sync", mount.mountpoint]).check()
            let served = { (path: String) in try? String(contentsOfFile: scratch.remote + "/" + path, encoding: .utf8) }
            #expect(served("kept/old.txt") == "old\n" && served("kept/a.txt") == "hello\n")
            #expect(!FileManager.default.fileExists(atPath: scratch.remote + "/keep"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.remote + "/new").isEmpty)
            let moves = try await server.accessLog().filter { $0.method == "MOVE" }.map(\.path)
            #expect(moves.contains("/dav/keep/"), "the folder's rename was not a MOVE: \(moves)")
            mount.unmount()

            let again = try await TestMount.start(remote: server.remote, in: scratch)
            defer { again.unmount() }
            #expect(try await Command(["cat", "--", again.path("kept/a.txt")]).check().stdout == "hello\n")
            #expect(try await Command(["cat", "--", again.path("kept/old.txt")]).check().stdout == "old\n")
        }

        @Test("webdavs:// reads over TLS from a server the system trusts; an untrusted certificate is refused")
        func tls() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("over-tls.txt", "encrypted on the way\n")
            try scratch.openRemoteToServers()
            let served = URL(fileURLWithPath: scratch.remote)
            let trusted = try await WebDAVTestServer.start(.apache, serving: served, tls: .trustedBySystem)
            defer { trusted.stop() }
            let mount = try await TestMount.start(remote: trusted.remote, in: scratch)
            defer { mount.unmount() }
            let read = try await Command(["cat", "--", mount.path("over-tls.txt")]).check()
            #expect(read.stdout == "encrypted on the way\n")
            mount.unmount()

            let untrusted = try await WebDAVTestServer.start(.apache, serving: served, tls: .untrusted)
            defer { untrusted.stop() }
            let refused = await
                (try TestMount.mountCommand(
                    remote: untrusted.remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache + "-untrusted"))
                .run()
            #expect(refused.status != 0, "a server with an untrusted certificate was mounted")
            #expect(refused.stderr.contains("CERTIFICATE_VERIFY_FAILED"), "\(refused)")
            #expect(!MountTable.isMounted(scratch.mountpoint))
        }

        @Test(
            "a wrong password is refused with 'authentication failed'; the password shows in no process, log or daemon's environ"
        )
        func wrongPassword() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("secret.txt", "behind a password\n")
            try scratch.openRemoteToServers()
            // No spaces: netrc separates its words by white space.
            let password = "correct-horse-\(UUID().uuidString)"
            for scheme in [WebDAVTestServer.AuthScheme.basic, .digest] {
                let server = try await WebDAVTestServer.start(
                    .apache, serving: URL(fileURLWithPath: scratch.remote),
                    credentials: .init(user: "alice", password: password, scheme: scheme))
                defer { server.stop() }
                let options = ["--user", "alice"]
                let cache = scratch.cache + "-" + scheme.rawValue
                var refused = try TestMount.mountCommand(
                    remote: server.remote, mountpoint: scratch.mountpoint, cacheDir: cache, options: options)
                refused.environment = ["FPFS_PASSWORD": "wrong \(password)"]
                let output = await refused.run()
                #expect(output.status != 0, "\(scheme): a wrong password mounted")
                #expect(output.stderr.contains("authentication failed"), "\(scheme): \(output)")
                #expect(!MountTable.isMounted(scratch.mountpoint))

                let mount = try await TestMount.start(
                    remote: server.remote, mountpoint: scratch.mountpoint, cacheDir: cache, options: options,
                    environment: ["FPFS_PASSWORD": password])
                defer { mount.unmount() }
                let read = try await Command(["cat", "--", mount.path("secret.txt")]).check()
                #expect(read.stdout == "behind a password\n")
                let processes = try await Command(["ps", "-eo", "args"]).check()
                #expect(!processes.stdout.contains(password), "\(scheme): the password is in the process list")
                let daemon = try #require(mount.daemon)
                for file in ["environ", "cmdline"] {
                    let shown = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(daemon.pid)/\(file)"))
                    #expect(
                        !String(decoding: shown, as: UTF8.self).contains(password),
                        "\(scheme): the password is in the daemon's /proc/PID/\(file)")
                }
                let log = try String(contentsOfFile: cache + "/fpfs.log", encoding: .utf8)
                #expect(!log.contains(password), "\(scheme): the password is in the log")
                #expect(!output.stderr.contains(password), "\(scheme): the password is in the error message")
                mount.unmount()

                // The same through a netrc file, without --user or FPFS_PASSWORD.
                let netrc = scratch.path + "/netrc"
                try "machine 127.0.0.1 login alice password \(password)\n"
                    .write(toFile: netrc, atomically: true, encoding: .utf8)
                let fromNetrc = try await TestMount.start(
                    remote: server.remote, mountpoint: scratch.mountpoint, cacheDir: cache,
                    environment: ["NETRC": netrc])
                defer { fromNetrc.unmount() }
                let again = try await Command(["cat", "--", fromNetrc.path("secret.txt")]).check()
                #expect(again.stdout == "behind a password\n", "\(scheme): reading with the netrc password")
            }
        }

        @Test("a mount started with standard input, output and error closed gets its password, and a refusal exits 1")
        func closedStandardDescriptors() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("secret.txt", "behind a password\n")
            try scratch.openRemoteToServers()
            let password = "closed-\(UUID().uuidString)"
            let server = try await WebDAVTestServer.start(
                .apache, serving: URL(fileURLWithPath: scratch.remote),
                credentials: .init(user: "alice", password: password, scheme: .basic))
            defer { server.stop() }
            // With 0–2 closed, the front end's first pipe took fd 3, which the daemon's ready pipe
            // overwrote before the secrets were handed on as fd 4 (DECISIONS 315).
            func closedMount(password: String) throws -> Command {
                let mount = try TestMount.mountCommand(
                    remote: server.remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache,
                    options: ["--user", "alice"])
                var command = Command(["sh", "-c", "exec \"$@\" <&- >&- 2>&-", "sh"] + mount.arguments)
                command.environment = ["FPFS_PASSWORD": password]
                return command
            }
            let refused = try await closedMount(password: "wrong").run()
            #expect(refused.status == 1, "\(refused)")
            #expect(!MountTable.isMounted(scratch.mountpoint))

            let started = try await closedMount(password: password).run()
            let mount = TestMount(remote: server.remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache)
            defer { mount.unmount() }
            #expect(started.status == 0, "\(started)\n\(mount.logTail())")
            let read = try await Command(["cat", "--", mount.path("secret.txt")]).check()
            #expect(read.stdout == "behind a password\n")
        }
    }
}
