import Foundation
import Synchronization

/// How much of an upload's contents a provider has sent, for `fpfs status`'s progress bars.
///
/// The engine registers a reporter for the contents file of a `createItem` or `modifyItem` call
/// while the call runs; a provider that can tell looks it up by that file and calls it as bytes
/// leave (one that cannot never looks, and the upload shows as done when it ends). Keyed by the
/// file rather than carried in a task-local value: providers send from tasks of their own.
public enum UploadProgress {
    private static let reporters = Mutex<[String: @Sendable (UInt64) -> Void]>([:])

    /// Has `report` hear of the bytes sent from `contents` until `stopReporting(for:)`.
    public static func startReporting(for contents: URL, to report: @escaping @Sendable (UInt64) -> Void) {
        reporters.withLock { $0[contents.path] = report }
    }

    public static func stopReporting(for contents: URL) {
        _ = reporters.withLock { $0.removeValue(forKey: contents.path) }
    }

    /// The reporter for bytes sent from `contents`, if the engine wants to hear of them.
    public static func reporter(for contents: URL) -> (@Sendable (UInt64) -> Void)? {
        reporters.withLock { $0[contents.path] }
    }
}
