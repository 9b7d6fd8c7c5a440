import FileProviderKit
import Foundation
import FuseKit
import ProviderTesting
import Testing
import VFS

/// A tree walk's next folders are listed before the walker opens them, within a window that only
/// the folders the kernel opens move (ListingAhead).
@Suite("VFS listing ahead")
struct ListingAheadTests {
    /// `top` with `count` subfolders `s00`…, each holding a file and a folder `inner`; returns the
    /// identifiers of `top`, of `s00`… and of each `inner`.
    private static func tree(_ remote: InMemoryProvider, count: Int) throws -> (
        top: ItemIdentifier, folders: [ItemIdentifier], inner: [ItemIdentifier]
    ) {
        let top = try remote.addDirectory(path: "top").identifier
        var folders: [ItemIdentifier] = []
        var inner: [ItemIdentifier] = []
        for index in 0..<count {
            let name = String(format: "top/s%02d", index)
            folders.append(try remote.addDirectory(path: name).identifier)
            inner.append(try remote.addDirectory(path: name + "/inner").identifier)
            _ = try remote.addFile(path: name + "/file.txt", text: "\(index)\n")
        }
        return (top, folders, inner)
    }

    /// The folders listed so far, once `expected` all are (or after five seconds).
    private static func listed(_ remote: InMemoryProvider, including expected: Set<ItemIdentifier>) async throws
        -> Set<ItemIdentifier>
    {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            let listed = Set(remote.recorder.calls(of: .enumerator).compactMap(\.identifier))
            if expected.isSubset(of: listed) || ContinuousClock.now > deadline { return listed }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test func aWalkListsTheNextSiblingsAndTheFirstSubfoldersAhead() async throws {
        let remote = InMemoryProvider()
        let (topFolder, folders, inner) = try Self.tree(remote, count: 10)
        let vfs = try await VFSHarness.make(provider: remote, listingAheadDepth: 3)
        let top = try await vfs.resolve("top").inode
        remote.recorder.reset()

        // Opening `top`: its first three subfolders, and nothing inside them.
        _ = try await vfs.list(top)
        let first = Set(folders[0..<3]).union([topFolder])
        var listed = try await Self.listed(remote, including: first)
        #expect(listed == first, "\(listed)")

        // The walker opens s00, already listed: the window moves to s03, and s00's own first
        // subfolder is listed too. s00 is not listed a second time.
        let s00 = try await vfs.resolve("top/s00").inode
        #expect(Set(try await vfs.list(s00)).isSuperset(of: ["file.txt", "inner"]))
        let second = first.union([folders[3], inner[0]])
        listed = try await Self.listed(remote, including: second)
        #expect(listed == second, "\(listed)")
        #expect(remote.recorder.calls(of: .enumerator).filter { $0.identifier == folders[0] }.count == 1)

        // Opened out of order, s05 moves the window past itself all the same.
        let s05 = try await vfs.resolve("top/s05").inode
        _ = try await vfs.list(s05)
        let third = second.union([folders[5], folders[6], folders[7], folders[8], inner[5]])
        listed = try await Self.listed(remote, including: third)
        #expect(listed == third, "\(listed)")
    }

    @Test func depthZeroListsOnlyWhatIsOpened() async throws {
        let remote = InMemoryProvider()
        let (_, folders, _) = try Self.tree(remote, count: 4)
        let vfs = try await VFSHarness.make(provider: remote, listingAheadDepth: 0)
        let top = try await vfs.resolve("top").inode
        _ = try await vfs.list(top)
        let s01 = try await vfs.resolve("top/s01").inode
        _ = try await vfs.list(s01)
        try await Task.sleep(for: .milliseconds(100))
        let listed = Set(remote.recorder.calls(of: .enumerator).compactMap(\.identifier))
        #expect(!listed.contains(folders[0]) && !listed.contains(folders[2]) && !listed.contains(folders[3]))
        #expect(listed.contains(folders[1]))
    }

    /// Walkers and listings ahead that open the same folders at once share one listing each,
    /// also when one of them reads the store just as the listing it would join ends.
    @Test func foldersOpenedByManyAtOnceAreListedOnce() async throws {
        let remote = InMemoryProvider()
        let (_, folders, _) = try Self.tree(remote, count: 40)
        let vfs = try await VFSHarness.make(provider: remote, listingAheadDepth: 4)
        var inodes: [InodeNumber] = []
        for index in folders.indices {
            inodes.append(try await vfs.resolve(String(format: "top/s%02d", index)).inode)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for inode in inodes {
                for _ in 0..<6 {
                    group.addTask { _ = try await vfs.list(inode) }
                    await Task.yield()
                }
            }
            try await group.waitForAll()
        }
        let listings = remote.recorder.calls(of: .enumerator).compactMap(\.identifier)
        let twice = Dictionary(listings.map { ($0, 1) }, uniquingKeysWith: +).filter { $0.value > 1 }
        #expect(twice.isEmpty, "folders listed more than once: \(twice)")
    }
}
