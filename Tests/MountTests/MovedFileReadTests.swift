import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// A file moved here keeps reading once the remote has taken the move, on a remote whose
    /// identifiers are places, where the move gives the file a new one (DECISIONS 303).
    @Suite("Reads of a moved file")
    struct MovedFileReadTests {
        static let text = String(repeating: "the bytes of a moved file\n", count: 8_000)

        /// Reads all of `handle` from its start.
        static func readAll(_ handle: Int32) -> String {
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = pread(handle, &buffer, buffer.count, off_t(bytes.count))
                guard count > 0 else { break }
                bytes += buffer.prefix(count)
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        @Test(
            "a handle opened before its file or folder moved reads it all after the move is sent",
            arguments: [WritableRemote.Kind.folder, .apache])
        func handleOpenedBeforeTheMove(_ kind: WritableRemote.Kind) async throws {
            let files = ["a.txt": Self.text, "d/b.txt": Self.text, "c.txt": Self.text]
            try await WriteMountTests.withMount(kind, files: files, options: ["--poll-interval", "0"]) { _, mount in
                var handles: [Int32] = []
                defer { for handle in handles { close(handle) } }
                for name in ["a.txt", "d/b.txt", "c.txt"] {
                    let handle = open(mount.path(name), O_RDONLY | O_CLOEXEC)
                    try #require(handle >= 0)
                    handles.append(handle)
                }
                // c.txt's first block is cached before the move; the rest of each file is not.
                var first = [UInt8](repeating: 0, count: 100)
                #expect(pread(handles[2], &first, first.count, 0) == first.count)
                try FileManager.default.moveItem(atPath: mount.path("a.txt"), toPath: mount.path("a2.txt"))
                try FileManager.default.moveItem(atPath: mount.path("d"), toPath: mount.path("e"))
                try FileManager.default.moveItem(atPath: mount.path("c.txt"), toPath: mount.path("e/c.txt"))
                _ = try await FpfsBinary.command(["sync", mount.mountpoint], timeout: .seconds(90)).check()
                for handle in handles { #expect(Self.readAll(handle) == Self.text) }
                for name in ["a2.txt", "e/b.txt", "e/c.txt"] {
                    #expect(try String(contentsOfFile: mount.path(name), encoding: .utf8) == Self.text)
                }
            }
        }

        @Test("a file read before its move is not fetched again after it")
        func cachedBytesFollowTheMove() async throws {
            let files = ["a.txt": Self.text, "d/b.txt": Self.text]
            try await WriteMountTests.withMount(.apache, files: files, options: ["--poll-interval", "0"]) {
                remote, mount in
                for name in files.keys {
                    #expect(try String(contentsOfFile: mount.path(name), encoding: .utf8) == Self.text)
                }
                try FileManager.default.moveItem(atPath: mount.path("a.txt"), toPath: mount.path("a2.txt"))
                try FileManager.default.moveItem(atPath: mount.path("d"), toPath: mount.path("e"))
                _ = try await FpfsBinary.command(["sync", mount.mountpoint], timeout: .seconds(90)).check()
                let before = try await remote.accessLog().filter { $0.method == "GET" }.count
                for name in ["a2.txt", "e/b.txt"] {
                    #expect(try await mount.xattr("user.fpfs.local_bytes", of: name) == String(Self.text.utf8.count))
                    #expect(try String(contentsOfFile: mount.path(name), encoding: .utf8) == Self.text)
                }
                #expect(try await remote.accessLog().filter { $0.method == "GET" }.count == before)
            }
        }
    }
}
