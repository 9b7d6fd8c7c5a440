import Foundation

/// A provider that can bring an older local copy up to date by fetching only what changed
/// (NSFileProviderIncrementalContentFetching).
public protocol IncrementalContentFetching: FileProvider {
    /// Writes the whole content of `version` into `sink`, using the bytes of `existingVersion`
    /// found at `existingContents` for the parts that did not change. Returns the item as of the
    /// content written.
    func fetchContents(
        for identifier: ItemIdentifier,
        version: ItemVersion?,
        usingExistingContentsAt existingContents: URL,
        existingVersion: ItemVersion,
        into sink: any ContentSink
    ) async throws -> Item
}
