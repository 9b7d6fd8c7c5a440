import FileProviderKit
import Foundation
import ProviderTesting
import Synchronization
import Testing
import VFS

/// A remote answers a write with a look at the item made after it (WebDAV: a PROPFIND after the
/// PUT). Another's write that lands in between is what the answer describes: the send must not take
/// it for its own, or the mount shows the other's size over the bytes written here and those bytes
/// are lost (DECISIONS 302, the checker's seed 15018 on Apache). Both are kept instead.
@Suite("Sends whose answer holds another's write")
struct OvertakenSendTests {
    /// Passes creations and modifications on; the first send of `path`'s bytes is overtaken by
    /// another's write of `theirs` there before the answer looks at the item.
    final class Overtaking: InnerRemote {
        let inner: InMemoryProvider
        private let path: String
        private let theirs: [UInt8]
        private let done = Mutex(false)

        init(_ inner: InMemoryProvider, overtaking path: String, with theirs: [UInt8]) {
            self.inner = inner
            self.path = path
            self.theirs = theirs
        }

        func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
            async throws -> Item
        {
            let created = try await inner.createItem(
                basedOn: template, fields: fields, contents: contents, options: options)
            return try await answer(created)
        }

        func modifyItem(
            _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?,
            options: ModifyItemOptions
        ) async throws -> Item {
            let modified = try await inner.modifyItem(
                item, baseVersion: baseVersion, changedFields: changedFields, contents: contents, options: options)
            return changedFields.contains(.contents) ? try await answer(modified) : modified
        }

        /// The item as a look after the write finds it: overtaken the first time it is `path`.
        private func answer(_ written: Item) async throws -> Item {
            guard inner.item(atPath: path)?.identifier == written.identifier else { return written }
            let first = done.withLock { done in
                defer { done = true }
                return !done
            }
            guard first else { return written }
            _ = try inner.setContents(path: path, theirs)
            return try await inner.item(for: written.identifier)
        }
    }

    @Test(arguments: [false, true])
    func bothAreKept(editing: Bool) async throws {
        let remote = try InMemoryProvider.docs()
        let path = editing ? "docs/readme.txt" : "docs/new.txt"
        let theirs = bytes("written on the remote as the upload ended\n")
        let vfs = try await VFSHarness.make(
            provider: Overtaking(remote, overtaking: path, with: theirs), replicatesChanges: true)
        let docs = try await vfs.resolve("docs").inode
        _ = try await vfs.list(docs)
        if editing {
            try await vfs.overwrite(try await vfs.resolve(path).inode, bytes("edited here\n"))
        } else {
            try await vfs.writeFile(path, bytes("edited here\n"))
        }
        try await vfs.waitForUploads()
        _ = try await vfs.fileSystem.replicateChangesNow()

        let base = editing ? "readme" : "new"
        let names = try await vfs.list(docs).filter { $0.hasPrefix(base) }.sorted()
        #expect(names.count == 2, "\(names)")
        #expect(try await vfs.readAll(try await vfs.resolve(path).inode) == theirs)
        let copy = try #require(names.first { $0.contains("(conflict ") })
        #expect(try await vfs.readAll(try await vfs.resolve("docs/\(copy)").inode) == bytes("edited here\n"))
        #expect(remote.contents(of: try #require(remote.item(atPath: path)).identifier) == theirs)
        #expect(
            remote.contents(of: try #require(remote.item(atPath: "docs/\(copy)")).identifier) == bytes("edited here\n"))
    }
}
