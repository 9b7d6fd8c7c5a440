import FileProviderKit
import Testing

@testable import MetadataStore
@testable import VFS

@Suite("Log lines name items by path")
struct LogNameTests {
    @Test("a failure logged by a cancelled task (the daemon stopping) still names the path")
    func cancelledTaskNamesThePath() async throws {
        let store = try MetadataStore()
        _ = try await store.saveRoot(
            Item(
                identifier: .rootContainer, parentIdentifier: .rootContainer, filename: Filename(""),
                kind: .directory, version: ItemVersion(content: "", metadata: "")))
        let records = try await store.upsert([
            Item(
                identifier: ItemIdentifier("docs"), parentIdentifier: .rootContainer, filename: Filename("docs"),
                kind: .directory, version: ItemVersion(content: "1", metadata: "1")),
            Item(
                identifier: ItemIdentifier("docs/a.txt"), parentIdentifier: ItemIdentifier("docs"),
                filename: Filename("a.txt"), kind: .file, version: ItemVersion(content: "1", metadata: "1")),
        ])
        let file = try #require(records.last)
        let names = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return [
                await store.logName(inode: file.inode), await store.logName(of: file.identifier),
                await store.logName(of: Array("b.txt".utf8), inFolder: ItemIdentifier("docs")),
            ]
        }
        #expect(await names.value == ["docs/a.txt", "docs/a.txt", "docs/b.txt"])
    }
}
