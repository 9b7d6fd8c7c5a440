/// A set of byte offsets kept as sorted, disjoint, non-adjacent ranges: which bytes of a cache file
/// have landed. Small in practice (a sequential fetch keeps one range), so an array suffices.
public struct ByteRanges: Sendable, Hashable {
    public private(set) var ranges: [Range<UInt64>] = []

    public init() {}

    /// Adds `range`, merging it with every range it overlaps or touches.
    public mutating func insert(_ range: Range<UInt64>) {
        guard !range.isEmpty else { return }
        var lower = range.lowerBound
        var upper = range.upperBound
        // First range that could touch: the first whose upper bound is >= lower.
        var start = ranges.partitioningIndex { $0.upperBound >= lower }
        var end = start
        while end < ranges.count, ranges[end].lowerBound <= upper {
            lower = min(lower, ranges[end].lowerBound)
            upper = max(upper, ranges[end].upperBound)
            end += 1
        }
        if start > ranges.count { start = ranges.count }
        ranges.replaceSubrange(start..<end, with: [lower..<upper])
    }

    /// Removes every byte of `range` from the set.
    public mutating func remove(_ range: Range<UInt64>) {
        guard !range.isEmpty else { return }
        var result: [Range<UInt64>] = []
        for existing in ranges {
            if existing.upperBound <= range.lowerBound || existing.lowerBound >= range.upperBound {
                result.append(existing)
                continue
            }
            if existing.lowerBound < range.lowerBound { result.append(existing.lowerBound..<range.lowerBound) }
            if existing.upperBound > range.upperBound { result.append(range.upperBound..<existing.upperBound) }
        }
        ranges = result
    }

    /// The parts of the set inside `range`.
    public func intersection(_ range: Range<UInt64>) -> ByteRanges {
        var result = ByteRanges()
        for existing in ranges where existing.overlaps(range) { result.insert(existing.clamped(to: range)) }
        return result
    }

    /// True when some byte of `range` is in the set.
    public func overlaps(_ range: Range<UInt64>) -> Bool {
        ranges.contains { $0.overlaps(range) }
    }

    /// True when every byte of `range` is in the set (an empty range is always contained).
    public func contains(_ range: Range<UInt64>) -> Bool {
        guard !range.isEmpty else { return true }
        let index = ranges.partitioningIndex { $0.upperBound > range.lowerBound }
        guard index < ranges.count else { return false }
        return ranges[index].lowerBound <= range.lowerBound && ranges[index].upperBound >= range.upperBound
    }

    /// The number of bytes in the set.
    public var count: UInt64 { ranges.reduce(0) { $0 + UInt64($1.count) } }

    public var isEmpty: Bool { ranges.isEmpty }
}

extension Array {
    /// The first index whose element satisfies `predicate`, for a predicate that is false then
    /// true along the array (binary search).
    func partitioningIndex(where predicate: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if predicate(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
