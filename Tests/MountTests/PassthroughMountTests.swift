import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// FUSE passthrough through the real binary (the tests run as root on a kernel that has it):
    /// the kernel reads complete local files itself, and a writer or a remote change meanwhile
    /// still gives every handle the bytes it should see.
    @Suite("Passthrough reads and new files' writes")
    struct PassthroughMountTests {
        static let first = "the first version\n"

        /// `pread` of up to `count` bytes at `offset`, as text.
        static func read(_ handle: Int32, count: Int = 200, at offset: Int = 0) -> String {
            var buffer = [UInt8](repeating: 0, count: count)
            let got = pread(handle, &buffer, count, off_t(offset))
            return String(decoding: buffer.prefix(max(got, 0)), as: UTF8.self)
        }

        /// Opens `path` or fails the test. Close-on-exec, so that a server another suite starts
        /// meanwhile does not hold the file open on the mount.
        static func open(_ path: String, _ flags: Int32) throws -> Int32 {
            let handle = Glibc.open(path, flags | O_CLOEXEC)
            try #require(handle >= 0, "open \(path): \(String(cString: strerror(errno)))")
            return handle
        }

        @Test(
            "a pinned file is read by the kernel itself, with the same bytes; --no-passthrough reads through the daemon",
            arguments: [true, false])
        func pinnedFileIsPassedThrough(_ passthrough: Bool) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try PatternFile.write(to: scratch.remote + "/data.bin", size: 8 << 20, seed: 21)
            let mount = try await TestMount.start(
                remote: scratch.remote, in: scratch, options: passthrough ? [] : ["--no-passthrough"])
            defer { mount.unmount() }
            try await FpfsBinary.command(["pin", mount.path("data.bin")], timeout: .seconds(120)).check()
            let before = try await mount.status()

            let expected = try await Command(["sha256sum", scratch.remote + "/data.bin"]).check().stdout.prefix(64)
            let read = try await Command(["sha256sum", mount.path("data.bin")]).check().stdout.prefix(64)
            #expect(read == expected)

            let after = try await mount.status()
            #expect(after.fetches.started == before.fetches.started)
            if passthrough {
                #expect(after.reads.passthroughOpens == before.reads.passthroughOpens + 1)
                #expect(after.reads.fromCache == before.reads.fromCache)
            } else {
                #expect(after.reads.passthroughOpens == 0)
                #expect(after.reads.fromCache > before.reads.fromCache)
            }
        }

        @Test(
            "a writer of a file the kernel reads itself shares its bytes with the readers, and they reach the remote",
            arguments: [WritableRemote.Kind.folder, .apache])
        func writerSharesBytesWithPassthroughReaders(_ kind: WritableRemote.Kind) async throws {
            try await WriteMountTests.withMount(kind, files: ["file.txt": Self.first]) { remote, mount in
                let path = mount.path("file.txt")
                try await FpfsBinary.command(["pin", path], timeout: .seconds(60)).check()
                let reader = try Self.open(path, O_RDONLY)
                defer { close(reader) }
                #expect(Self.read(reader) == Self.first)
                #expect(try await mount.status().reads.passthroughOpens == 1)

                let writer = try Self.open(path, O_RDWR)
                let appended = "appended\n"
                #expect(
                    pwrite(writer, appended, appended.utf8.count, off_t(Self.first.utf8.count)) == appended.utf8.count)
                #expect(Self.read(reader) == Self.first + appended)

                // The writer's memory map is on the reader's file too.
                let size = Self.first.utf8.count + appended.utf8.count
                let map = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, writer, 0)
                try #require(map != MAP_FAILED)
                "THE".utf8.enumerated().forEach { map!.storeBytes(of: $1, toByteOffset: $0, as: UInt8.self) }
                #expect(msync(map, size, MS_SYNC) == 0)
                munmap(map, size)
                let expected = "THE first version\n" + appended
                #expect(Self.read(reader) == expected)
                #expect(close(writer) == 0)

                let later = try Self.open(path, O_RDONLY)
                #expect(Self.read(later) == expected)
                close(later)
                try await mount.sync()
                #expect(try String(contentsOfFile: remote.scratch.remote + "/file.txt", encoding: .utf8) == expected)
            }
        }

        @Test(
            "a new file is written by the kernel itself: its size shows while it is written, and its bytes, size and time reach the remote",
            arguments: [WritableRemote.Kind.folder, .apache])
        func newFileIsWrittenByTheKernel(_ kind: WritableRemote.Kind) async throws {
            try await WriteMountTests.withMount(kind) { remote, mount in
                let path = mount.path("new.bin")
                let before = try await mount.status()
                let writer = try Self.open(path, O_WRONLY | O_CREAT | O_EXCL)
                let chunk = [UInt8](repeating: UInt8(ascii: "Z"), count: 1 << 20)
                for index in 0..<3 { #expect(pwrite(writer, chunk, chunk.count, off_t(index << 20)) == chunk.count) }
                #expect(try await mount.status().reads.passthroughWriters == before.reads.passthroughWriters + 1)
                #expect(Self.size(of: path) == 3 << 20, "stat sees what the kernel wrote")
                let reader = try Self.open(path, O_RDONLY)
                #expect(Self.read(reader, count: 4, at: 2 << 20) == "ZZZZ")
                close(reader)

                // Through the daemon (setattr) while the kernel writes: a size, then the time
                // `cp -p` gives, which the close must keep.
                let size = (2 << 20) + 5
                #expect(ftruncate(writer, off_t(size)) == 0)
                #expect(Self.size(of: path) == size)
                let time = timespec(tv_sec: 1_000_000_000, tv_nsec: 0)
                var times = [time, time]
                #expect(futimens(writer, &times) == 0)
                #expect(close(writer) == 0)
                var status = stat()
                #expect(stat(path, &status) == 0)
                #expect(status.st_size == size)
                #expect(status.st_mtim.tv_sec == 1_000_000_000)

                try await mount.sync()
                let uploaded = try Data(contentsOf: URL(fileURLWithPath: remote.scratch.remote + "/new.bin"))
                #expect(uploaded.count == size)
                #expect(uploaded.allSatisfy { $0 == UInt8(ascii: "Z") })
                if kind == .folder {
                    #expect(stat(remote.scratch.remote + "/new.bin", &status) == 0)
                    #expect(status.st_mtim.tv_sec == 1_000_000_000, "the folder remote keeps the time")
                }
            }
        }

        @Test(
            "a truncating writer of an existing file is written by the kernel when it is the file's only handle",
            arguments: [WritableRemote.Kind.folder, .apache])
        func truncatingWriterIsWrittenByTheKernel(_ kind: WritableRemote.Kind) async throws {
            try await WriteMountTests.withMount(kind, files: ["alone.txt": Self.first, "shared.txt": Self.first]) {
                remote, mount in
                let before = try await mount.status().reads.passthroughWriters
                let second = "the second version, longer than the first\n"
                let alone = try Self.open(mount.path("alone.txt"), O_WRONLY | O_TRUNC)
                #expect(Self.size(of: mount.path("alone.txt")) == 0)
                #expect(write(alone, second, second.utf8.count) == second.utf8.count)
                #expect(Self.size(of: mount.path("alone.txt")) == second.utf8.count)
                #expect(close(alone) == 0)
                #expect(try await mount.status().reads.passthroughWriters == before + 1)

                // A reader through the daemon is open: the writer writes through the daemon too.
                let reader = try Self.open(mount.path("shared.txt"), O_RDONLY)
                defer { close(reader) }
                #expect(Self.read(reader) == Self.first)
                let shared = try Self.open(mount.path("shared.txt"), O_WRONLY | O_TRUNC)
                #expect(write(shared, second, second.utf8.count) == second.utf8.count)
                #expect(close(shared) == 0)
                #expect(try await mount.status().reads.passthroughWriters == before + 1)

                try await mount.sync()
                for name in ["alone.txt", "shared.txt"] {
                    let text = try String(contentsOfFile: remote.scratch.remote + "/" + name, encoding: .utf8)
                    #expect(text == second, "\(name) on the remote")
                }
            }
        }

        @Test(
            "a writer without O_TRUNC alone on its file is written by the kernel; its in-place write reaches the remote, even after kill -9 of the daemon while the file is open",
            arguments: [false, true])
        func inPlaceWriterIsWrittenByTheKernel(_ killed: Bool) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("edit.txt", Self.first)
            let remote = try await WritableRemote.start(.folder, in: scratch)
            defer { remote.stop() }
            let first = try await TestMount.start(remote: remote.argument, in: scratch)
            defer { first.unmount() }
            let before = try await first.status().reads.passthroughWriters
            let writer = try Self.open(first.path("edit.txt"), O_RDWR)
            #expect(Self.read(writer) == Self.first)
            // Asked before the write: the command's fork closes a copy of the descriptor, and
            // that close is a flush, which would save the write.
            #expect(try await first.status().reads.passthroughWriters == before + 1)
            #expect(pwrite(writer, "THE", 3, 0) == 3)
            let expected = "THE first version\n"
            guard killed else {
                #expect(close(writer) == 0)
                try await first.sync()
                #expect(try String(contentsOfFile: scratch.remote + "/edit.txt", encoding: .utf8) == expected)
                return
            }
            // The daemon never hears of the write: only the mark made at open tells the next one.
            let daemon = try #require(first.daemon)
            daemon.send(SIGKILL)
            #expect(await daemon.waitForExit(timeout: .seconds(10)), "the daemon survived SIGKILL")
            close(writer)

            let second = try await TestMount.start(remote: remote.argument, in: scratch)
            defer { second.unmount() }
            try await second.sync()
            #expect(try String(contentsOfFile: scratch.remote + "/edit.txt", encoding: .utf8) == expected)
            #expect(try String(contentsOfFile: second.path("edit.txt"), encoding: .utf8) == expected)
        }

        @Test(
            "a new file the kernel writes keeps its bytes and size through kill -9 of the daemon before the release, shown at once by an offline mount"
        )
        func newFileWrittenByTheKernelSurvivesKill() async throws {
            try await WriteMountTests.withMount(.folder, options: ["--remote-timeout", "3"]) { remote, first in
                try await Command(["ls", first.mountpoint]).check()
                try remote.goAway()
                let text = "written by the kernel\n"
                let writer = Glibc.open(first.path("new.txt"), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0o644)
                try #require(writer >= 0, "create: \(String(cString: strerror(errno)))")
                #expect(pwrite(writer, text, text.utf8.count, 0) == text.utf8.count)
                // The store still holds the size of the creation: only the file knows what was written.
                let daemon = try #require(first.daemon)
                daemon.send(SIGKILL)
                #expect(await daemon.waitForExit(timeout: .seconds(10)), "the daemon survived SIGKILL")
                close(writer)

                do {
                    let offline = try await TestMount.start(remote: remote.argument, in: remote.scratch)
                    defer { offline.unmount() }
                    #expect(Self.size(of: offline.path("new.txt")) == text.utf8.count)
                    #expect(try String(contentsOfFile: offline.path("new.txt"), encoding: .utf8) == text)
                }
                try await remote.comeBack()
                let online = try await TestMount.start(remote: remote.argument, in: remote.scratch)
                defer { online.unmount() }
                try await online.sync()
                #expect(try String(contentsOfFile: remote.folder + "/new.txt", encoding: .utf8) == text)
            }
        }

        /// The size `stat` gives for `path`, or -1.
        static func size(of path: String) -> Int {
            var status = stat()
            return stat(path, &status) == 0 ? Int(status.st_size) : -1
        }

        @Test("after a remote change, a handle the kernel reads itself keeps its version and a new one reads the new")
        func remoteChangeWhilePassedThrough() async throws {
            try await WriteMountTests.withMount(
                .folder, files: ["file.txt": Self.first], options: ["--poll-interval", "0"]
            ) {
                remote, mount in
                let path = mount.path("file.txt")
                try await FpfsBinary.command(["pin", path], timeout: .seconds(60)).check()
                let old = try Self.open(path, O_RDONLY)
                defer { close(old) }
                #expect(Self.read(old) == Self.first)

                let second = "the second version, longer than the first\n"
                try second.write(toFile: remote.scratch.remote + "/file.txt", atomically: true, encoding: .utf8)
                try await FpfsBinary.command(["signal", mount.mountpoint], timeout: .seconds(90)).check()

                let new = try Self.open(path, O_RDONLY)
                defer { close(new) }
                #expect(Self.read(new) == second)
                #expect(Self.read(old) == Self.first)
            }
        }
    }
}
