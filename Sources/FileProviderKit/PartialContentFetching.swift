/// Options of a partial fetch (NSFileProviderFetchContentsOptions).
public struct PartialFetchOptions: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Return bytes of exactly the version asked for, or throw `versionNoLongerAvailable`.
    public static let strictVersioning = PartialFetchOptions(rawValue: 1 << 0)
}

/// The outcome of a partial fetch: which bytes were written into the sink, and of which item.
public struct PartialFetchResult: Sendable {
    public var retrievedRange: Range<UInt64>
    public var item: Item

    public init(retrievedRange: Range<UInt64>, item: Item) {
        self.retrievedRange = retrievedRange
        self.item = item
    }
}

/// A provider that can fetch a byte range of a file (NSFileProviderPartialContentFetching).
///
/// The retrieved range starts on a multiple of `alignment`; its length is a multiple of it except
/// where it ends at the end of the file; and it covers `minimalRange`. A provider may instead write
/// the whole file and say so (`0..<size`). The engine checks all of this and treats a range it
/// cannot trust as an error.
public protocol PartialContentFetching: FileProvider {
    func fetchPartialContents(
        for identifier: ItemIdentifier,
        version: ItemVersion,
        minimalRange: Range<UInt64>,
        aligningTo alignment: UInt64,
        options: PartialFetchOptions,
        into sink: any ContentSink
    ) async throws -> PartialFetchResult
}

extension PartialFetchResult {
    /// True when `retrievedRange` keeps the contract for a request of `minimalRange` aligned to
    /// `alignment` in a file of `size` bytes.
    public func isValid(minimalRange: Range<UInt64>, alignment: UInt64, size: UInt64) -> Bool {
        let range = retrievedRange
        guard alignment > 0, range.lowerBound % alignment == 0, range.upperBound <= size else { return false }
        guard range.upperBound == size || range.count % Int(alignment) == 0 else { return false }
        let wanted = minimalRange.clamped(to: 0..<size)
        return wanted.isEmpty || (range.lowerBound <= wanted.lowerBound && range.upperBound >= wanted.upperBound)
    }
}

extension PartialFetchResult {
    /// The smallest range that keeps the alignment contract and covers the part of `minimalRange`
    /// inside a file of `size` bytes: start rounded down and end rounded up to `alignment`, cut at
    /// the end of the file. What a provider should retrieve for a partial fetch.
    public static func alignedRange(covering minimalRange: Range<UInt64>, alignment: UInt64, size: UInt64)
        -> Range<UInt64>
    {
        let alignment = max(alignment, 1)
        let lower = min(minimalRange.lowerBound, size)
        let upper = min(minimalRange.upperBound, size)
        let start = lower / alignment * alignment
        guard upper > start else { return start..<start }
        return start..<min(size, (upper + alignment - 1) / alignment * alignment)
    }
}
