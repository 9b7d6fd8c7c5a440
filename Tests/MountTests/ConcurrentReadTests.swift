import Foundation
import Testing

extension MountTests {
    /// Readers of the same cloud file share one download (DESIGN §3: one whole-file fetch per item,
    /// shared by every reader).
    @Suite("Concurrent readers share one fetch")
    struct ConcurrentReadTests {
        @Test("two processes reading one cloud file at once cause one fetch and both get the right bytes")
        func twoReadersOneFetch() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let file = "shared.bin"
            try PatternFile.write(to: scratch.remote + "/" + file, size: 64 << 20, seed: 7)
            let expected = try await Command(["sha256sum", "--", scratch.remote + "/" + file]).check()
                .stdout.prefix(64)
            // A slow remote, so the second reader arrives while the first fetch is still running.
            let remote = "file://\(scratch.remote)?delay=300ms&bandwidth=50MiB"
            let mount = try await TestMount.start(remote: remote, in: scratch)
            defer { mount.unmount() }
            #expect(try await mount.xattr("user.fpfs.state", of: file) == "cloud")
            let before = try await mount.status().fetches

            async let first = Command(["sha256sum", "--", mount.path(file)], timeout: .seconds(120)).run()
            async let second = Command(["sha256sum", "--", mount.path(file)], timeout: .seconds(120)).run()
            let readers = await [first, second]

            for reader in readers {
                #expect(reader.succeeded, "\(reader)")
                #expect(reader.stdout.prefix(64) == expected, "a reader got other bytes than the source")
            }
            let after = try await mount.status().fetches
            #expect(after.started - before.started == 1, "two readers of one cloud file started \(after.started - before.started) fetches")
            #expect(try await mount.xattr("user.fpfs.state", of: file) == "local")
        }
    }
}
