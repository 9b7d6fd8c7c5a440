import FileProviderKit
import Foundation
import ProviderTesting
import Synchronization

/// A remote that reports half of each new file's contents sent, then waits for `release`; it
/// records the contents each creation and modification sends, as read when the call goes on.
final class HalfwayRemote: InnerRemote {
    let inner = InMemoryProvider()
    private let gate = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let reached = Mutex(false)
    private let sentContents = Mutex<[[UInt8]]>([])

    var isHalfway: Bool { reached.withLock { $0 } }

    /// The contents sent so far, in order.
    var sent: [[UInt8]] { sentContents.withLock { $0 } }

    func release() { gate.withLock { $0 }?.resume() }

    func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
        async throws -> Item
    {
        if let contents { UploadProgress.reporter(for: contents)?(template.size / 2) }
        await withCheckedContinuation { continuation in
            gate.withLock { $0 = continuation }
            reached.withLock { $0 = true }
        }
        try record(contents)
        return try await inner.createItem(basedOn: template, fields: fields, contents: contents, options: options)
    }
    func modifyItem(
        _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?,
        options: ModifyItemOptions
    ) async throws -> Item {
        try record(contents)
        return try await inner.modifyItem(
            item, baseVersion: baseVersion, changedFields: changedFields, contents: contents, options: options)
    }

    private func record(_ contents: URL?) throws {
        guard let contents else { return }
        let bytes = [UInt8](try Data(contentsOf: contents))
        sentContents.withLock { $0.append(bytes) }
    }
}
