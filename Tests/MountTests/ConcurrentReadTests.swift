import Foundation
import Testing

extension MountTests {
    /// Readers of the same cloud file share one download (ARCHITECTURE §3: readers of the same bytes wait
    /// on one fetch).
    @Suite("Concurrent readers share one fetch")
    struct ConcurrentReadTests {
        @Test("two processes reading one cloud file at once cause one fetch and both get the right bytes")
        func twoReadersOneFetch() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let file = "shared.bin"
            let size = 48 << 20
            try PatternFile.write(to: scratch.remote + "/" + file, size: size, seed: 7)
            let expected = try await Command(["sha256sum", "--", scratch.remote + "/" + file]).check()
                .stdout.prefix(64)
            // A slow remote, so the second reader arrives while the first fetch is still running; and
            // one cache block larger than the file, so a shared download is exactly one fetch whether
            // the engine fetches whole files or aligned blocks.
            let remote = "file://\(scratch.remote)?delay=300ms&bandwidth=50MiB"
            let mount = try await TestMount.start(remote: remote, in: scratch, options: ["--block-size", "64MiB"])
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
            #expect(
                after.started - before.started == 1,
                "two readers of one cloud file started \(after.started - before.started) fetches")
            #expect(
                after.bytes - before.bytes == size,
                "\(after.bytes - before.bytes) bytes fetched for a \(size)-byte file")
            #expect(try await mount.xattr("user.fpfs.state", of: file) == "local")
        }
    }
}
