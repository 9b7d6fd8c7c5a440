import Foundation
import Testing

@testable import WebDAVProvider

/// A request body's files are closed when the request is over, also the one its body opens late.
@Suite struct OpenedFilesTests {
    @Test func anOpenAfterTheRequestIsOverIsRefusedAndLeavesNothingOpen() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("opened-\(UUID().uuidString)")
        try Data("snapshot".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let opened = OpenedFiles()
        _ = try opened.open(file)
        opened.closeAll()
        #expect(throws: CancellationError.self) { _ = try opened.open(file) }
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")
        }
        #expect(!descriptors.contains(file.path), "a descriptor of the file is still open")
    }
}
