import CFuse
import Foundation
import TestServers
import Testing

@testable import FuseKit

/// Real mounts of `TestFileSystem`, driven with ordinary tools and POSIX calls. Serialized: one
/// FUSE session per process handles signals, and the tests count requests.
@Suite(.serialized)
struct FuseSessionTests {
    typealias Mount = MountedFileSystem

    @Test func procMountsShowsFsnameAndType() async throws {
        try await Mount.with { mount in
            let mounts = try String(contentsOfFile: "/proc/mounts", encoding: .utf8)
            #expect(mounts.contains("\(Mount.fsname) \(mount.mountpoint) fuse.fpfs "))
        }
        let after = try String(contentsOfFile: "/proc/mounts", encoding: .utf8)
        #expect(!after.contains(Mount.fsname))
    }

    @Test func lookupAndGetattr() async throws {
        try await Mount.with { mount in
            let stat = try await Mount.run("stat", "-c", "%s %F %a %i", mount.path("hello.txt"))
            #expect(stat.status == 0)
            #expect(stat.output == "12 regular file 644 2\n")
            let directory = try await Mount.run("stat", "-c", "%F %a", mount.path("many"))
            #expect(directory.output == "directory 755\n")
            let missing = try await Mount.errno { Int(access(mount.path("absent"), F_OK)) }
            #expect(missing == ENOENT)
            // A non-Errno error from the filesystem reaches the caller as EIO.
            let boom = try await Mount.errno { Int(access(mount.path("boom"), F_OK)) }
            #expect(boom == EIO)
        }
    }

    @Test func readdirplusAcrossManyRequests() async throws {
        try await Mount.with { mount in
            let listing = try await Mount.run("ls", "-l", mount.path("many"))
            let lines = listing.output.split(separator: "\n").filter { $0.hasPrefix("-") }
            #expect(lines.count == TestFileSystem.manyCount)
            let names = try await Mount.offPool {
                try FileManager.default.contentsOfDirectory(atPath: mount.path("many"))
            }
            #expect(names.sorted() == (0..<TestFileSystem.manyCount).map { String(format: "file-%04d", $0) })
            let counters = mount.fileSystem.counters.withLock { $0 }
            #expect(counters.readdirplusCalls > 2)
            #expect(counters.readdirCalls == 0)
            let root = try await Mount.run("ls", mount.mountpoint)
            #expect(root.output == "big.bin\nhello.txt\nlink\nmany\nsink\n")
        }
    }

    /// libfuse 3.14 cannot ask for passthrough; the session edits its INIT reply, and an open
    /// that names a backing file has the kernel read that file without a single read request.
    @Test func aBackingFileIsReadByTheKernelItself() async throws {
        try await Mount.with { mount in
            mount.fileSystem.backingFiles.withLock { $0 = mount.session.backingFiles }
            let big = try await Mount.offPool { try Data(contentsOf: URL(fileURLWithPath: mount.path("big.bin"))) }
            #expect(big == Data(mount.fileSystem.bigBytes))
            #expect(mount.fileSystem.counters.withLock { $0.bigReads } == 0)
        }
    }

    @Test func readBytesAndFileRanges() async throws {
        try await Mount.with { mount in
            let hello = try await Mount.run("cat", mount.path("hello.txt"))
            #expect(hello.output == "hello, fuse\n")
            let big = try await Mount.offPool { try Data(contentsOf: URL(fileURLWithPath: mount.path("big.bin"))) }
            #expect(big.count == mount.fileSystem.bigBytes.count)
            #expect(big == Data(mount.fileSystem.bigBytes))
            // An unaligned range that ends past the end of the file.
            let path = mount.path("big.bin")
            let tail = try await Mount.offPool {
                let file = open(path, O_RDONLY | O_CLOEXEC)
                defer { close(file) }
                var buffer = [UInt8](repeating: 0, count: 10_000)
                let count = pread(file, &buffer, buffer.count, off_t(big.count - 4321))
                return Array(buffer.prefix(max(count, 0)))
            }
            #expect(tail == Array(mount.fileSystem.bigBytes.suffix(4321)))
        }
    }

    @Test func readlink() async throws {
        try await Mount.with { mount in
            let target = try await Mount.offPool {
                try FileManager.default.destinationOfSymbolicLink(atPath: mount.path("link"))
            }
            #expect(target == "hello.txt")
            let followed = try await Mount.run("cat", mount.path("link"))
            #expect(followed.output == "hello, fuse\n")
        }
    }

    @Test func extendedAttributes() async throws {
        try await Mount.with { mount in
            let path = mount.path("hello.txt")
            let size = try await Mount.offPool { getxattr(path, "user.note", nil, 0) }
            #expect(size == TestFileSystem.note.count)
            let tooSmall = try await Mount.errno {
                var buffer = [UInt8](repeating: 0, count: 10)
                return getxattr(path, "user.note", &buffer, buffer.count)
            }
            #expect(tooSmall == ERANGE)
            let value = try await Mount.run("getfattr", "--only-values", "-n", "user.note", path)
            #expect(value.output == String(decoding: TestFileSystem.note, as: UTF8.self))
            let listSize = try await Mount.offPool { listxattr(path, nil, 0) }
            #expect(listSize == "user.note\0".utf8.count)
            let names = try await Mount.offPool {
                var buffer = [CChar](repeating: 0, count: 64)
                let count = listxattr(path, &buffer, buffer.count)
                return Array(buffer.prefix(max(count, 0)))
            }
            #expect(names.map { UInt8(bitPattern: $0) } == Array("user.note\0".utf8))
            let listTooSmall = try await Mount.errno {
                var buffer = [CChar](repeating: 0, count: 4)
                return listxattr(path, &buffer, buffer.count)
            }
            #expect(listTooSmall == ERANGE)
            let absent = try await Mount.errno { getxattr(mount.path("big.bin"), "user.note", nil, 0) }
            #expect(absent == ENODATA)
        }
    }

    @Test func writeOperationsDefaultToReadOnly() async throws {
        try await Mount.with { mount in
            let mkdirError = try await Mount.errno { Int(mkdir(mount.path("new"), 0o755)) }
            #expect(mkdirError == EROFS)
            let createError = try await Mount.errno { Int(open(mount.path("new.txt"), O_CREAT | O_WRONLY, 0o644)) }
            #expect(createError == EROFS)
            let unlinkError = try await Mount.errno { Int(unlink(mount.path("hello.txt"))) }
            #expect(unlinkError == EROFS)
            let openError = try await Mount.errno { Int(open(mount.path("hello.txt"), O_WRONLY)) }
            #expect(openError == EROFS)
        }
    }

    @Test func writesArriveInOneMebibyteRequests() async throws {
        try await Mount.with { mount in
            let copy = try await Mount.run(
                "dd", "if=/dev/zero", "of=\(mount.path("sink"))", "bs=1M", "count=4", "conv=notrunc")
            #expect(copy.status == 0)
            #expect(mount.fileSystem.counters.withLock { $0.largestWrite } == 1 << 20)
        }
    }

    @Test func statfs() async throws {
        try await Mount.with { mount in
            let stat = try await Mount.run("stat", "-f", "-c", "%S %b %f %a %c %d", mount.mountpoint)
            #expect(stat.output == "4096 1000 600 500 100 50\n")
        }
    }

    @Test func invalidationMakesTheKernelAskAgain() async throws {
        try await Mount.with { mount in
            let before = try await Mount.run("stat", "-c", "%s", mount.path("hello.txt"))
            #expect(before.output == "12\n")
            mount.fileSystem.counters.withLock { $0.helloSize = 20 }
            // Attributes are cached for 60 seconds: the kernel does not ask.
            let cached = try await Mount.run("stat", "-c", "%s", mount.path("hello.txt"))
            #expect(cached.output == "12\n")
            try await mount.session.notifier.invalidateInode(TestFileSystem.hello, offset: -1)
            let after = try await Mount.run("stat", "-c", "%s", mount.path("hello.txt"))
            #expect(after.output == "20\n")
            try await mount.session.notifier.invalidateEntry(parent: .root, name: Array("hello.txt".utf8))
            try await mount.session.notifier.invalidateEntry(parent: .root, name: Array("never-looked-up".utf8))
        }
    }

    /// A notification can block in the kernel until a request that holds a directory's lock is
    /// answered, and that request may need the session meanwhile (a create registering its
    /// backing file): one use of the live session must not wait for another.
    @Test func sessionUsesDoNotWaitForEachOther() async throws {
        try await Mount.with { mount in
            let session = mount.session
            let innerRan = DispatchSemaphore(value: 0)
            let outer = session.withLiveSession { _ in
                Thread.detachNewThread {
                    _ = session.withLiveSession { _ in 0 }
                    innerRan.signal()
                }
                return innerRan.wait(timeout: .now() + 5) == .success ? 1 : 0
            }
            #expect(outer == 1, "a second use of the session waited for the first")
        }
    }

    @Test func interruptCancelsTheOperation() async throws {
        try await Mount.with { mount in
            let getfattr = try ChildProcess.spawn(
                ["getfattr", "-n", "user.slow", mount.path("hello.txt")], stdout: .file("/dev/null"),
                stderr: .file("/dev/null"))
            for _ in 0..<100 where mount.fileSystem.counters.withLock({ $0.slowCalls }) == 0 {
                try await Task.sleep(for: .milliseconds(20))
            }
            // A killed caller makes the kernel send INTERRUPT, then wait for the answer.
            kill(getfattr, SIGKILL)
            let started = ContinuousClock.now
            try await Mount.offPool {
                var status: Int32 = 0
                while waitpid(getfattr, &status, 0) < 0, errno == EINTR {}
            }
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(mount.fileSystem.counters.withLock { $0.cancelledCalls } == 1)
        }
    }

    @Test func fusermountEndsTheSessionAndShutsDown() async throws {
        var notifier: FuseNotifier?
        let fileSystem = try await Mount.with { mount in
            let unmount = try await Mount.run("fusermount3", "-u", mount.mountpoint)
            #expect(unmount.status == 0)
            // Wait for the loop to see the unmount, without calling unmount() ourselves.
            for _ in 0..<100 where mount.fileSystem.counters.withLock({ $0.shutdowns }) == 0 {
                try await Task.sleep(for: .milliseconds(50))
            }
            notifier = mount.session.notifier
            return mount.fileSystem
        }
        #expect(fileSystem.counters.withLock { $0.shutdowns } == 1)
        // Notifications after the end are harmless no-ops.
        try await notifier?.invalidateInode(.root)
    }

    @Test func sighupEndsTheSession() async throws {
        var handler = sigaction()
        sigaction(SIGHUP, nil, &handler)
        // libfuse installs its handler only over the default one; without it SIGHUP would kill us.
        try #require(handler.__sigaction_handler.sa_handler == nil)
        let fileSystem = try await Mount.with { mount in
            for _ in 0..<100 {
                sigaction(SIGHUP, nil, &handler)
                if handler.__sigaction_handler.sa_handler != nil { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            try #require(handler.__sigaction_handler.sa_handler != nil)
            kill(getpid(), SIGHUP)
            for _ in 0..<100 where mount.fileSystem.counters.withLock({ $0.shutdowns }) == 0 {
                try await Task.sleep(for: .milliseconds(50))
            }
            return mount.fileSystem
        }
        #expect(fileSystem.counters.withLock { $0.shutdowns } == 1)
        sigaction(SIGHUP, nil, &handler)
        #expect(handler.__sigaction_handler.sa_handler == nil)
    }

    @Test func unmountBeforeRunStillEndsCleanly() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fpfs-fusekit-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fileSystem = try TestFileSystem(directory: directory)
        let session = FuseSession(operations: fileSystem, mountpoint: directory.path, fsname: Mount.fsname)
        try session.mount()
        defer { session.unmount() }
        session.unmount()
        #expect(!(try String(contentsOfFile: "/proc/mounts", encoding: .utf8).contains(Mount.fsname)))
        try await session.run()
        #expect(fileSystem.counters.withLock { $0.shutdowns } == 1)
        await #expect(throws: FuseError.notMounted) { try await session.run() }
    }

    @Test func mountFailsClearly() async throws {
        let session = FuseSession(
            operations: try TestFileSystem(directory: FileManager.default.temporaryDirectory),
            mountpoint: "/nonexistent/fpfs-mountpoint", fsname: "fpfs:test")
        #expect(throws: FuseError.self) { try session.mount() }
        await #expect(throws: FuseError.notMounted) { try await session.run() }
        let badOption = FuseSession(
            operations: try TestFileSystem(directory: FileManager.default.temporaryDirectory),
            mountpoint: "/tmp", fsname: "fpfs:test", options: ["no_such_option"])
        #expect(throws: FuseError.sessionCreationFailed(options: badOption.options)) { try badOption.mount() }
    }
}
