import FileProviderKit
import Foundation
import ProviderTesting
import Synchronization
import Testing
import VFS

/// An upload's progress, as a provider reports it through `UploadProgress`, reaches `fpfs status`
/// (the statistics' uploads in flight), and the bytes count as sent once it ends.
@Suite("VFS upload progress")
struct UploadProgressTests {
    @Test func anUploadShowsItsProgressAndCountsWhenDone() async throws {
        let remote = HalfwayRemote()
        let vfs = try await VFSHarness.make(provider: remote)
        try await vfs.writeFile("big.bin", [UInt8](repeating: 7, count: 1000))
        while !remote.isHalfway { try await Task.sleep(for: .milliseconds(10)) }

        let during = vfs.fileSystem.statisticsSnapshot
        #expect(during.uploading.map(\.name) == ["big.bin"])
        #expect(during.uploading.first?.sent == 500)
        #expect(during.uploading.first?.length == 1000)
        #expect(during.uploads.bytes == 500)

        remote.release()
        try await vfs.waitForUploads()
        // The counters follow the journal by a moment: the entry leaves it before the send ends.
        var after = vfs.fileSystem.statisticsSnapshot
        for _ in 0..<200 where after.uploads.sent == 0 {
            try await Task.sleep(for: .milliseconds(10))
            after = vfs.fileSystem.statisticsSnapshot
        }
        #expect(after.uploading.isEmpty)
        // Each send of the contents counts them whole (the journal may send a file twice when a
        // write lands while its creation is under way).
        #expect(after.uploads.sent >= 1)
        #expect(after.uploads.bytes == 1000 * UInt64(after.uploads.sent))
    }
}
