/// A set of byte offsets kept as sorted, disjoint, non-adjacent ranges: which bytes of a cache file
/// have landed. A sequential fetch keeps one range; scattered reads keep one per block read, so
/// lookups search the sorted array rather than walk it.
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
        let overlapping = indices(overlapping: range)
        guard !overlapping.isEmpty else { return }
        var kept: [Range<UInt64>] = []
        let first = ranges[overlapping.lowerBound]
        let last = ranges[overlapping.upperBound - 1]
        if first.lowerBound < range.lowerBound { kept.append(first.lowerBound..<range.lowerBound) }
        if last.upperBound > range.upperBound { kept.append(range.upperBound..<last.upperBound) }
        ranges.replaceSubrange(overlapping, with: kept)
    }

    /// The parts of the set inside `range`.
    public func intersection(_ range: Range<UInt64>) -> ByteRanges {
        var result = ByteRanges()
        result.ranges = ranges[indices(overlapping: range)].map { $0.clamped(to: range) }
        return result
    }

    /// True when some byte of `range` is in the set.
    public func overlaps(_ range: Range<UInt64>) -> Bool {
        !indices(overlapping: range).isEmpty
    }

    /// The indices of the ranges that share a byte with `range`, found by binary search.
    private func indices(overlapping range: Range<UInt64>) -> Range<Int> {
        guard !range.isEmpty else { return 0..<0 }
        let start = ranges.partitioningIndex { $0.upperBound > range.lowerBound }
        var end = start
        while end < ranges.count, ranges[end].lowerBound < range.upperBound { end += 1 }
        return start..<end
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
