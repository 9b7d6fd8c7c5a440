import FileProviderKit
import Foundation
import Synchronization
import SystemPackage

/// A `ContentSink` that keeps nothing: it compares what a fetch delivers with a local file, to
/// tell whether the remote's version of a file is the one an interrupted upload sent (DECISIONS
/// 173). It stops the fetch at the first difference.
final class SameBytesSink: ContentSink {
    private struct Differs: Error {}

    private let file: FileDescriptor
    private let differs = Mutex(false)

    init(comparingWith file: FileDescriptor) { self.file = file }

    /// Whether every byte fetched matched the file's at its offset.
    var matched: Bool { !differs.withLock { $0 } }

    func write(_ bytes: some ContiguousBytes & Sendable, at offset: UInt64) async throws {
        let fetched = bytes.withUnsafeBytes { Array($0) }
        let file = self.file
        let local = try await BlockingIO.run {
            var buffer = [UInt8](repeating: 0, count: fetched.count)
            let count = try buffer.withUnsafeMutableBytes { try file.read(fromAbsoluteOffset: Int64(offset), into: $0) }
            return Array(buffer.prefix(count))
        }
        guard local == fetched else {
            differs.withLock { $0 = true }
            throw Differs()
        }
    }

    /// Whether `identifier`'s current remote content is exactly the bytes of the file at `path`
    /// (`size` of them): fetched and compared, nothing kept.
    static func remoteHolds(
        _ path: URL, size: UInt64, identifier: ItemIdentifier, remote: Item, provider: any FileProvider
    ) async throws -> Bool {
        guard remote.kind == .file, remote.size == size else { return false }
        let file = try FileDescriptor.open(FilePath(path.path(percentEncoded: false)), .readOnly)
        defer { try? file.close() }
        let sink = SameBytesSink(comparingWith: file)
        do {
            _ = try await provider.fetchContents(for: identifier, version: remote.version, into: sink)
        } catch  where !sink.matched {
            return false
        }
        return sink.matched
    }
}
