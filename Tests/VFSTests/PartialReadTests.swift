import FileProviderKit
import Foundation
import FuseKit
import ProviderTesting
import SystemPackage
import Testing
import VFS

@Suite("VFS partial materialization, in-process against InMemoryProvider")
struct PartialReadTests {
    static let blockSize: UInt64 = 1 << 20

    /// `count` bytes of a 256-byte cycle ((i × 131) ^ seed), each 4 KiB page starting at another
    /// point of it, so that a page served at the wrong place within 1 MiB differs. Built by
    /// copying: a closure per byte took seconds in a debug build, holding the test run's two
    /// cooperative threads while every other suite waited.
    private func pattern(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        let cycle = (0..<256).map { UInt8(truncatingIfNeeded: ($0 &* 131) ^ Int(seed)) }
        let twoCycles = cycle + cycle
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 4096)
        var page = 0
        while bytes.count < count {
            let start = (page &* 97) % 256
            for _ in 0..<16 { bytes += twoCycles[start..<start + 256] }
            page += 1
        }
        bytes.removeLast(bytes.count - count)
        return bytes
    }

    /// A remote holding one file of pattern bytes, mounted, the file looked up and opened.
    private struct OpenedFile {
        let remote: InMemoryProvider
        let vfs: VFSHarness
        let file: Entry
        let handle: FuseKit.FileHandle
        let contents: [UInt8]

        init(_ contents: [UInt8], fetchDelay: Duration? = nil, pipelineDepth: Int = 8) async throws {
            remote = InMemoryProvider(configuration: .init(fetchDelay: fetchDelay))
            self.contents = contents
            _ = try remote.addFile(path: "file.bin", contents: contents)
            vfs = try await VFSHarness.make(provider: remote, pipelineDepth: pipelineDepth)
            file = try await vfs.resolve("file.bin")
            handle = try await vfs.fileSystem.open(inode: file.inode, flags: O_RDONLY, context: vfs.context).handle
        }

        /// Reads through the handle opened here, or through `other`, and returns the bytes.
        func read(at offset: UInt64, size: Int, through other: FuseKit.FileHandle? = nil) async throws -> [UInt8] {
            try VFSHarness.bytes(
                of: try await vfs.fileSystem.read(
                    inode: file.inode, handle: other ?? handle, offset: offset, size: size, context: vfs.context))
        }

        /// The file's bytes from `offset` on for `size`.
        func expected(at offset: UInt64, size: Int) -> [UInt8] { Array(contents[Int(offset)..<Int(offset) + size]) }
    }

    @Test func aSmallReadFarIntoALargeFileFetchesOnlyItsBlocks() async throws {
        let opened = try await OpenedFile(pattern(20 << 20))
        let (remote, vfs, file, contents) = (opened.remote, opened.vfs, opened.file, opened.contents)
        let offset: UInt64 = 15 << 20 + 12345
        #expect(try await opened.read(at: offset, size: 4096) == opened.expected(at: offset, size: 4096))
        let local = UInt64(try await vfs.xattr(file.inode, "user.fpfs.local_bytes"))!
        #expect(local > 0 && local <= 2 * Self.blockSize)
        #expect(try await vfs.xattr(file.inode, "user.fpfs.state") == "partial")
        #expect(remote.recorder.count(.fetchContents) == 0)
        for call in remote.recorder.calls(of: .fetchPartialContents) {
            let range = try #require(call.range)
            #expect(range.lowerBound % Self.blockSize == 0)
        }
        try await vfs.fileSystem.release(inode: file.inode, handle: opened.handle, flags: 0)
        #expect(try await vfs.readAll(file.inode, chunk: 1 << 20) == contents)
        #expect(try await vfs.xattr(file.inode, "user.fpfs.state") == "local")
    }

    /// A provider on a network event loop writes without suspending, in pieces large enough that
    /// the sink holds it back while its writer catches up: every byte lands, in a read's own fetch
    /// and in read-ahead alike.
    @Test func aProviderWritingWithoutSuspendingIsHeldBackAndLosesNothing() async throws {
        let contents = pattern(24 << 20)
        let remote = InMemoryProvider(configuration: .init(writeChunkSize: 1 << 20, writesWithoutSuspending: true))
        _ = try remote.addFile(path: "file.bin", contents: contents)
        let vfs = try await VFSHarness.make(provider: remote)
        let file = try await vfs.resolve("file.bin")
        #expect(try await vfs.readAll(file.inode, chunk: 1 << 20) == contents)
        #expect(try await vfs.xattr(file.inode, "user.fpfs.state") == "local")
    }

    /// 4 × depth readers of cold files: `depth` fetches run at once (held until they all have
    /// started, so that how the test's tasks are scheduled does not matter), and never more.
    @Test(arguments: [1, 2, 3])
    func thePipelineDepthBoundsConcurrentFetches(depth: Int) async throws {
        let remote = InMemoryProvider()
        for index in 0..<(4 * depth) {
            _ = try remote.addFile(path: "f\(index)", contents: pattern(300_000, seed: UInt8(index)))
        }
        let vfs = try await VFSHarness.make(provider: remote, remoteTimeout: .seconds(30), pipelineDepth: depth)
        remote.holdFetches()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<(4 * depth) {
                group.addTask {
                    let file = try await vfs.resolve("f\(index)")
                    let bytes = try await vfs.readAll(file.inode)
                    #expect(bytes == pattern(300_000, seed: UInt8(index)))
                }
            }
            let deadline = ContinuousClock.now + .seconds(20)
            while remote.recorder.fetchesInFlight < depth, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            // With every slot taken, the other readers' fetches wait for one.
            try await Task.sleep(for: .milliseconds(100))
            #expect(remote.recorder.fetchesInFlight == depth)
            remote.releaseFetches()
            try await group.waitForAll()
        }
        #expect(remote.recorder.maximumFetchesInFlight == depth)
        #expect(vfs.fileSystem.statisticsSnapshot.fetches.maxInFlight == depth)
    }

    @Test func sequentialReadsFetchAheadInParallelAndReturnTheRightBytes() async throws {
        let remote = InMemoryProvider(configuration: .init(fetchDelay: .milliseconds(20)))
        let contents = pattern(12 << 20)
        _ = try remote.addFile(path: "seq.bin", contents: contents)
        let vfs = try await VFSHarness.make(provider: remote, pipelineDepth: 8)
        let file = try await vfs.resolve("seq.bin")
        #expect(try await vfs.readAll(file.inode, chunk: 128 * 1024) == contents)
        #expect(remote.recorder.maximumFetchesInFlight > 1, "read-ahead runs block fetches in parallel")
        #expect(remote.recorder.bytesServed == UInt64(contents.count), "each block is fetched once")
    }

    /// The read-ahead of a miss is asked for while the miss is on its way, not a round trip
    /// later: its first request's worth rides on the read's own request, after the read's bytes,
    /// so that it neither waits for a slot (depth 1) nor competes with the read.
    @Test(arguments: [1, 8])
    func aMissCarriesItsReadAheadInItsOwnRequest(depth: Int) async throws {
        let opened = try await OpenedFile(pattern(4 << 20), fetchDelay: .milliseconds(200), pipelineDepth: depth)
        let (remote, vfs, file) = (opened.remote, opened.vfs, opened.file)
        #expect(try await opened.read(at: 0, size: 128 << 10) == opened.expected(at: 0, size: 128 << 10))
        let calls = remote.recorder.calls(of: .fetchPartialContents)
        #expect(calls.count == 1)
        #expect(calls.first?.range == 0..<2 * Self.blockSize, "the read's block and the window's first one")
        #expect(
            try await opened.read(at: Self.blockSize, size: 128 << 10)
                == opened.expected(at: Self.blockSize, size: 128 << 10))
        try await vfs.fileSystem.release(inode: file.inode, handle: opened.handle, flags: 0)
        #expect(try await vfs.readAll(file.inode, chunk: 1 << 20) == opened.contents)
        #expect(remote.recorder.bytesServed == UInt64(opened.contents.count), "each block is fetched once")
    }

    /// A read of bytes already in the cache file is answered on the session thread, and moves the
    /// read-ahead on as a read by the task does; a miss, a read before the first one opened the
    /// cache file, and a read past the end are answered as before.
    @Test func aReadOfBytesHereIsAnsweredOnTheSessionThreadAndMovesReadAheadOn() async throws {
        let opened = try await OpenedFile(pattern(8 << 20), pipelineDepth: 1)
        let (remote, vfs, file, handle) = (opened.remote, opened.vfs, opened.file, opened.handle)
        let fileSystem = vfs.fileSystem
        #expect(
            fileSystem.readNow(inode: file.inode, handle: handle, offset: 0, size: 4096, context: vfs.context) == nil,
            "a first read opens the cache file in the task")
        #expect(try await opened.read(at: 0, size: 128 << 10) == opened.expected(at: 0, size: 128 << 10))
        var answered: ReadReply?
        try await VFSHarness.eventually("the first fetch's landing") {
            answered = fileSystem.readNow(
                inode: file.inode, handle: handle, offset: 128 << 10, size: 128 << 10, context: vfs.context)
            return answered != nil
        }
        #expect(try VFSHarness.bytes(of: try #require(answered)) == opened.expected(at: 128 << 10, size: 128 << 10))
        let far: UInt64 = 6 << 20
        #expect(
            fileSystem.readNow(inode: file.inode, handle: handle, offset: far, size: 4096, context: vfs.context) == nil,
            "a miss waits in a task")
        let end = fileSystem.readNow(
            inode: file.inode, handle: handle, offset: UInt64(opened.contents.count), size: 4096, context: vfs.context)
        #expect(try VFSHarness.bytes(of: try #require(end)).isEmpty)
        // Sequential reads answered here grow the window as before: the read-ahead fetches the rest.
        var offset: UInt64 = 256 << 10
        while offset < 2 * Self.blockSize {
            let reply = try #require(
                fileSystem.readNow(
                    inode: file.inode, handle: handle, offset: offset, size: 128 << 10, context: vfs.context))
            #expect(try VFSHarness.bytes(of: reply) == opened.expected(at: offset, size: 128 << 10))
            offset += 128 << 10
        }
        try await VFSHarness.eventually("the read-ahead of the reads answered here") {
            remote.recorder.bytesServed > 2 * Self.blockSize
        }
        try await fileSystem.release(inode: file.inode, handle: handle, flags: 0)
    }

    /// A block already here ends what rides along: the miss fetches only its own block.
    @Test func whatRidesOnAMissStopsAtBytesAlreadyHere() async throws {
        let opened = try await OpenedFile(pattern(4 << 20))
        let (remote, vfs, file) = (opened.remote, opened.vfs, opened.file)
        let offset = Self.blockSize + 4096
        #expect(try await opened.read(at: offset, size: 4096) == opened.expected(at: offset, size: 4096))
        let again = try await vfs.fileSystem.open(inode: file.inode, flags: O_RDONLY, context: vfs.context)
        #expect(
            try await opened.read(at: 0, size: 128 << 10, through: again.handle)
                == opened.expected(at: 0, size: 128 << 10))
        let ranges = remote.recorder.calls(of: .fetchPartialContents).compactMap(\.range)
        #expect(ranges.first == Self.blockSize..<2 * Self.blockSize)
        #expect(ranges.contains(0..<Self.blockSize), "the miss's own block, alone")
        try await vfs.fileSystem.release(inode: file.inode, handle: opened.handle, flags: 0)
        try await vfs.fileSystem.release(inode: file.inode, handle: again.handle, flags: 0)
    }

    /// A large fetch has the cache file allocated ahead of its writes, a step at a time: one that
    /// fails (here after 3 of its 8 MiB) leaves at most a step allocated beyond its bytes, which the
    /// cache does not count, and the next read fetches the range again.
    @Test func aFailedLargeFetchLeavesLittleAllocatedBeyondItsBytes() async throws {
        let contents = pattern(8 << 20)
        let remote = InMemoryProvider()
        _ = try remote.addFile(path: "file.bin", contents: contents)
        let injector = FaultInjector()
        let short = injector.add(FaultRule(.shortContent(bytes: 3 << 20), on: .fetch))
        let vfs = try await VFSHarness.make(provider: injector.wrap(remote))
        let file = try await vfs.resolve("file.bin")
        let handle = try await vfs.fileSystem.open(inode: file.inode, flags: O_RDONLY, context: vfs.context).handle
        await #expect(throws: (any Error).self) {
            _ = try await vfs.fileSystem.read(
                inode: file.inode, handle: handle, offset: 0, size: 8 << 20, context: vfs.context)
        }
        let blocks = vfs.directory.appendingPathComponent("blocks")
        var allocated: Int64 = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: blocks.path) {
            var status = stat()
            #expect(stat(blocks.appendingPathComponent(name).path, &status) == 0)
            allocated += Int64(status.st_blocks) * 512
        }
        #expect(allocated <= (3 << 20) + (2 << 20))

        injector.remove(short)
        try await Task.sleep(for: .milliseconds(1100))  // past the moment a failure is remembered
        let read = try await vfs.fileSystem.read(
            inode: file.inode, handle: handle, offset: 0, size: 8 << 20, context: vfs.context)
        #expect(try VFSHarness.bytes(of: read) == contents)
    }

    @Test func aNonMaterializingProcessReadsOnlyWhatIsLocal() async throws {
        let remote = InMemoryProvider()
        _ = try remote.addFile(path: "cloud.txt", text: "in the cloud")
        _ = try remote.addFile(path: "local.txt", text: "already here")
        let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let ownName = (me as NSString).lastPathComponent
        let directory = VFSHarness.newDirectory()
        do {
            let open = try await VFSHarness.make(provider: remote, directory: directory)
            _ = try await open.readAll(try await open.resolve("local.txt").inode)
            await open.fileSystem.shutdown()
        }
        let fetchesBefore = remote.recorder.count(.fetchPartialContents)
        let gated = try await VFSHarness.make(provider: remote, directory: directory, nonMaterializing: [ownName])
        #expect(try await gated.readAll(try await gated.resolve("local.txt").inode) == Array("already here".utf8))
        let cloud = try await gated.resolve("cloud.txt")
        await #expect(throws: Errno.deadlock) { _ = try await gated.readAll(cloud.inode) }
        #expect(remote.recorder.count(.fetchPartialContents) == fetchesBefore)
        #expect(gated.fileSystem.statisticsSnapshot.blocked[ownName] == 1)
    }

    /// The kernel's short name of the process (/proc/PID/comm, at most 15 bytes) is matched too.
    @Test func aProcessListedByItsShortNameIsRefused() async throws {
        let remote = InMemoryProvider()
        _ = try remote.addFile(path: "cloud.txt", text: "in the cloud")
        let comm = try String(contentsOfFile: "/proc/self/comm", encoding: .utf8)
        let shortName = comm.trimmingCharacters(in: .newlines)
        let gated = try await VFSHarness.make(provider: remote, nonMaterializing: [shortName])
        let cloud = try await gated.resolve("cloud.txt")
        await #expect(throws: Errno.deadlock) { _ = try await gated.readAll(cloud.inode) }
        #expect(remote.recorder.count(.fetchPartialContents) == 0)
        #expect(gated.fileSystem.statisticsSnapshot.blocked[shortName] == 1)
    }
}
