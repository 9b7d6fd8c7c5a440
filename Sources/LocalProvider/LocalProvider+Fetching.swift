import FileProviderKit
import Glibc

extension LocalProvider {
    /// Bytes read and handed to the sink at a time when no bandwidth limit asks for less.
    static let chunkSize = 1 << 20

    /// Streams the current content in order. A `version` that is no longer on disk is not an error
    /// here: the current item and its content come back, as the contract allows.
    public func fetchContents(for identifier: ItemIdentifier, version: ItemVersion?, into sink: any ContentSink)
        async throws -> Item
    {
        let (file, item) = try await openForReading(identifier, requiring: nil)
        try await stream(file, of: item, range: 0..<item.size, into: sink)
        return item
    }

    /// Streams the aligned range covering `minimalRange`: start rounded down and end rounded up to
    /// `alignment`, clipped to the end of the file. With `.strictVersioning` a file whose content
    /// version is no longer `version` throws `versionNoLongerAvailable`; without it the current
    /// content comes back, with its item.
    public func fetchPartialContents(
        for identifier: ItemIdentifier,
        version: ItemVersion,
        minimalRange: Range<UInt64>,
        aligningTo alignment: UInt64,
        options: PartialFetchOptions,
        into sink: any ContentSink
    ) async throws -> PartialFetchResult {
        let required = options.contains(.strictVersioning) ? version : nil
        let (file, item) = try await openForReading(identifier, requiring: required)
        let range = PartialFetchResult.alignedRange(covering: minimalRange, alignment: alignment, size: item.size)
        try await stream(file, of: item, range: range, into: sink)
        return PartialFetchResult(retrievedRange: range, item: item)
    }

    /// Opens a regular file for reading and describes it as of the open descriptor, so the item
    /// matches the bytes about to be read. Throws `versionNoLongerAvailable` when `required` is
    /// given and the content is no longer that version.
    private func openForReading(_ identifier: ItemIdentifier, requiring required: ItemVersion?) async throws
        -> (OpenFile, Item)
    {
        try await request { tree in
            let located = try tree.locate(identifier)
            guard located.status.kind == .file else {
                throw ProviderError.cannotSynchronize(reason: "\(located.path) is not a regular file")
            }
            let file = try OpenFile(path: tree.absolute(located.path), flags: O_RDONLY | O_NOFOLLOW)
            let opened = LocalTree.Located(
                path: located.path, status: try FileStatus(descriptor: file.descriptor, path: file.path))
            guard let item = try tree.item(opened, parent: tree.parentIdentifier(of: located.path)),
                item.identifier == identifier
            else { throw ProviderError.noSuchItem(identifier) }
            if let required, item.version.content != required.content { throw ProviderError.versionNoLongerAvailable }
            return (file, item)
        }
    }

    /// Copies `range` of `file` into `sink` chunk by chunk, in order, within the bandwidth limit,
    /// stopping at once when the task is cancelled. A file that changed while it was being read
    /// throws `versionNoLongerAvailable`: the bytes sent may mix two versions.
    private func stream(_ file: OpenFile, of item: Item, range: Range<UInt64>, into sink: any ContentSink)
        async throws
    {
        let chunkSize = bandwidthLimiter?.chunkSize(atMost: Self.chunkSize) ?? Self.chunkSize
        var offset = range.lowerBound
        while offset < range.upperBound {
            try Task.checkCancellation()
            let position = offset
            let count = Int(min(UInt64(chunkSize), range.upperBound - position))
            try await bandwidthLimiter?.acquire(count)
            let bytes = try await onOpenFile {
                try POSIX.read(file.descriptor, at: position, count: count, path: file.path)
            }
            guard bytes.count == count else { throw ProviderError.versionNoLongerAvailable }
            try await sink.write(bytes, at: position)
            offset += UInt64(count)
        }
        let status = try await onOpenFile { try FileStatus(descriptor: file.descriptor, path: file.path) }
        guard LocalTree.version(of: status).content == item.version.content else {
            throw ProviderError.versionNoLongerAvailable
        }
    }
}
