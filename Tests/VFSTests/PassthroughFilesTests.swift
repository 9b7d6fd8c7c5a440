import FileProviderKit
import FuseKit
import Logging
import Synchronization
import SystemPackage
import Testing

@testable import VFS

/// The kernel's rules for passthrough opens, kept by `PassthroughFiles` without a mount: a
/// registry that hands out ids and remembers which are registered stands in for the kernel.
@Suite("PassthroughFiles")
struct PassthroughFilesTests {
    final class Registry: BackingFileRegistry {
        private let state = Mutex((next: Int32(1), registered: Set<Int32>(), refusal: Errno?.none))

        func register(_ file: FileDescriptor) throws(Errno) -> BackingID {
            let result = state.withLock { state -> Result<BackingID, Errno> in
                if let refusal = state.refusal { return .failure(refusal) }
                defer { state.next += 1 }
                state.registered.insert(state.next)
                return .success(BackingID(rawValue: state.next))
            }
            return try result.get()
        }

        func unregister(_ id: BackingID) {
            state.withLock { _ = $0.registered.remove(id.rawValue) }
        }

        var registered: Set<Int32> { state.withLock { $0.registered } }

        func refuse(with error: Errno) { state.withLock { $0.refusal = error } }
    }

    let registry = Registry()
    let files = PassthroughFiles(logger: Logger(label: "test"))
    let version = PassthroughFiles.Candidate(
        file: FileDescriptor(rawValue: 0), content: .cached(ItemIdentifier("a"), contentVersion: [1]))
    let newer = PassthroughFiles.Candidate(
        file: FileDescriptor(rawValue: 0), content: .cached(ItemIdentifier("a"), contentVersion: [2]))

    init() {
        files.attach(registry)
    }

    @Test("a truncating writer alone on an inode passes through once its content is ready; not when another came")
    func truncatingWriterSettles() {
        let local = PassthroughFiles.Candidate(file: FileDescriptor(rawValue: 0), content: .local)
        let alone = files.openWriter(inode: 7)
        #expect(alone == .requests)
        let settled = files.settle(inode: 7, alone, candidate: local)
        #expect(settled == .passthrough(BackingID(rawValue: 1)))
        #expect(files.open(inode: 7, candidate: local) == settled, "a reader of the same content joins it")

        // Another handle opened while the writer's content was made: it stays on requests.
        let writer = files.openWriter(inode: 8)
        let reader = files.open(inode: 8, candidate: nil)
        #expect(files.settle(inode: 8, writer, candidate: local) == .requests)
        files.release(inode: 8, reader)
        files.release(inode: 8, writer)

        // One that came and went: the kernel may hold its pages, so no passthrough either.
        files.kernelForgot(9)
        let later = files.openWriter(inode: 9)
        files.release(inode: 9, files.open(inode: 9, candidate: nil))
        #expect(files.settle(inode: 9, later, candidate: local) == .requests)
        files.release(inode: 9, later)
        #expect(files.openWriter(inode: 9) == .requests, "the pages it left keep the next writer on requests")
    }

    @Test("opens of one complete content share one backing file, which goes with the last release")
    func sameContentSharesOneBackingFile() {
        let first = files.open(inode: 5, candidate: version)
        let second = files.open(inode: 5, candidate: version)
        #expect(first == .passthrough(BackingID(rawValue: 1)))
        #expect(second == first)
        #expect(files.backing(of: 5) == version.content)
        files.release(inode: 5, first)
        #expect(registry.registered == [1])
        files.release(inode: 5, second)
        #expect(registry.registered.isEmpty)
        #expect(files.backing(of: 5) == nil)
    }

    @Test("while an inode passes through, a writer and a newer version name its backing file with direct I/O")
    func otherOpensOfAPassedThroughInodeUseDirectIO() {
        let reader = files.open(inode: 5, candidate: version)
        #expect(files.open(inode: 5, candidate: nil) == .directIO(BackingID(rawValue: 1)))
        #expect(files.open(inode: 5, candidate: newer) == .directIO(BackingID(rawValue: 1)))
        files.release(inode: 5, reader)
        #expect(registry.registered == [1])
    }

    @Test(
        "while a handle without a backing file is open, nothing passes through; after it, only once the kernel forgot the inode"
    )
    func requestsKeepAnInodeFromPassingThrough() {
        let writer = files.open(inode: 5, candidate: nil)
        #expect(writer == .requests)
        #expect(files.open(inode: 5, candidate: version) == .requests)
        files.release(inode: 5, writer)
        files.release(inode: 5, .requests)
        // Its pages may still be in the kernel's page cache.
        let again = files.open(inode: 5, candidate: version)
        #expect(again == .requests)
        files.release(inode: 5, again)
        files.kernelForgot(5)
        #expect(files.open(inode: 5, candidate: version) == .passthrough(BackingID(rawValue: 1)))
        // Other inodes are not held up.
        #expect(files.open(inode: 6, candidate: version) == .passthrough(BackingID(rawValue: 2)))
    }

    @Test("a refused registration stops passthrough for the mount")
    func refusalStopsPassthrough() {
        registry.refuse(with: .notPermitted)
        #expect(files.open(inode: 5, candidate: version) == .requests)
        files.kernelForgot(5)
        #expect(files.open(inode: 6, candidate: version) == .requests)
    }

    @Test("without a registry every open goes through requests")
    func noRegistryNoPassthrough() {
        let unattached = PassthroughFiles(logger: Logger(label: "test"))
        #expect(unattached.open(inode: 5, candidate: version) == .requests)
    }
}
