import Foundation
import TestServers
import Testing

extension MountTests {
    /// `fpfs mount s3://BUCKET…` against a real object store: Ceph's RADOS Gateway
    /// (TestServers.S3TestServer), one bucket per test, the objects checked on the server itself.
    @Suite("S3 remotes")
    struct S3MountTests {
        /// The mount's environment: the keys, as every AWS tool takes them.
        static func environment(_ server: S3TestServer, secret: String? = nil) -> [String: String] {
            [
                "AWS_ACCESS_KEY_ID": server.accessKey, "AWS_SECRET_ACCESS_KEY": secret ?? server.secretKey,
                "AWS_PROFILE": "", "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
            ]
        }

        /// A new bucket holding `files` (key: content).
        static func bucket(_ label: String, on server: S3TestServer, files: [String: String]) async throws -> String {
            let bucket = S3TestServer.bucketName(label)
            try await server.makeBucket(bucket)
            for (key, content) in files { try await server.put(Data(content.utf8), bucket: bucket, key: key) }
            return bucket
        }

        static func options(_ server: S3TestServer) -> [String] {
            ["--s3-endpoint", server.endpoint.absoluteString, "--poll-interval", "0"]
        }

        @Test("reads, writes, renames, deletes and a conflict through the mount reach the bucket")
        func readWriteRenameDeleteConflict() async throws {
            let server = try await S3TestServer.shared()
            let bucket = try await Self.bucket(
                "mount", on: server, files: ["docs/readme.txt": "from the server\n", "notes.txt": "the original\n"])
            let scratch = try Scratch()
            defer { scratch.remove() }
            let mount = try await TestMount.start(
                remote: "s3://\(bucket)", in: scratch, options: Self.options(server),
                environment: Self.environment(server))
            defer { mount.unmount() }

            let read = try await Command(["cat", mount.path("docs/readme.txt")]).check()
            #expect(read.stdout == "from the server\n")
            try await Command.bash(
                """
                set -e
                cd "$1"
                echo written here > new.txt
                mkdir empty
                mv docs/readme.txt docs/moved.txt
                echo doomed > doomed.txt
                """, mount.mountpoint
            ).check()
            try await mount.sync()
            try await Command(["rm", mount.path("doomed.txt")]).check()
            try await mount.sync()
            #expect(try await server.get(bucket: bucket, key: "new.txt") == Data("written here\n".utf8))
            #expect(try await server.get(bucket: bucket, key: "docs/moved.txt") == Data("from the server\n".utf8))
            #expect(try await server.get(bucket: bucket, key: "docs/readme.txt") == nil)
            #expect(try await server.get(bucket: bucket, key: "doomed.txt") == nil)
            #expect(try await server.keys(bucket: bucket).contains("empty/"), "mkdir left no marker")

            // A conflict: the object changes on the server, then through the mount.
            try await Command(["cat", mount.path("notes.txt")]).check()
            try await server.put(Data("changed on the server\n".utf8), bucket: bucket, key: "notes.txt")
            try await Command.bash("echo 'changed here' > \"$1\"", mount.path("notes.txt")).check()
            try await mount.sync()
            let keys = try await server.keys(bucket: bucket)
            let copy = try #require(keys.first { $0.hasPrefix("notes (conflict ") && $0.hasSuffix(").txt") }, "\(keys)")
            #expect(try await server.get(bucket: bucket, key: "notes.txt") == Data("changed on the server\n".utf8))
            let kept = try await server.get(bucket: bucket, key: copy)
            #expect(kept == Data("changed here\n".utf8))
        }

        @Test("a wrong secret fails the mount with one clear line; the secret shows in no process, log or message")
        func wrongSecret() async throws {
            let server = try await S3TestServer.shared()
            let bucket = try await Self.bucket("secret", on: server, files: ["a.txt": "kept\n"])
            let scratch = try Scratch()
            defer { scratch.remove() }
            let wrongSecret = "wrong-\(UUID().uuidString)"
            var refused = try TestMount.mountCommand(
                remote: "s3://\(bucket)", mountpoint: scratch.mountpoint, cacheDir: scratch.cache,
                options: Self.options(server))
            refused.environment = Self.environment(server, secret: wrongSecret)
            let output = await refused.run()
            if output.succeeded {
                TestMount(remote: "s3://\(bucket)", mountpoint: scratch.mountpoint, cacheDir: scratch.cache).unmount()
            }
            #expect(output.status != 0, "a wrong secret mounted")
            #expect(
                output.stderr.contains("access denied by the server: check the access key"), "\(output)")
            #expect(!output.stderr.contains(wrongSecret), "the secret is in the message")
            #expect(!MountTable.isMounted(scratch.mountpoint))

            let mount = try await TestMount.start(
                remote: "s3://\(bucket)", in: scratch, options: Self.options(server),
                environment: Self.environment(server))
            defer { mount.unmount() }
            #expect(try await Command(["cat", mount.path("a.txt")]).check().stdout == "kept\n")
            let processes = try await Command(["ps", "-eo", "args"]).check()
            #expect(!processes.stdout.contains(server.secretKey), "the secret is in the process list")
            let log = try String(contentsOfFile: scratch.cache + "/fpfs.log", encoding: .utf8)
            #expect(!log.contains(server.secretKey) && !log.contains(wrongSecret), "the secret is in the log")
            let store = try await Command.bash(
                "cat \"$1\"/* 2>/dev/null | grep -c -F \"$2\" || true", scratch.cache, server.secretKey
            ).check()
            #expect(
                store.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "the secret is in the cache folder"
            )
        }
    }
}
