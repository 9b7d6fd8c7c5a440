/// How much of an upload's contents a provider has sent, for `fpfs status`'s progress bars.
///
/// The engine sets `reporter` around `createItem` and `modifyItem` calls that send contents; a
/// provider that can tell calls `add(_:)` as bytes leave (one that cannot simply never calls it,
/// and the upload shows as done when it ends). Providers that send from another task capture
/// `reporter` while they are still in the engine's task.
public enum UploadProgress {
    @TaskLocal public static var reporter: (@Sendable (UInt64) -> Void)?

    /// Reports `bytes` more sent.
    public static func add(_ bytes: UInt64) { reporter?(bytes) }
}
