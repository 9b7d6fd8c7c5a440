import Testing

@testable import BlockCache

@Suite("ByteRanges")
struct ByteRangesTests {
    @Test("inserts, removes, intersections and overlap checks agree with a plain set of the same bytes")
    func agreesWithASetOfBytes() {
        var generator = SystemRandomNumberGenerator()
        let size: UInt64 = 200
        func randomRange() -> Range<UInt64> {
            let start = UInt64.random(in: 0...size, using: &generator)
            return start..<UInt64.random(in: start...min(size, start + 40), using: &generator)
        }
        for _ in 0..<200 {
            var ranges = ByteRanges()
            var bytes = Set<UInt64>()
            for _ in 0..<30 {
                let range = randomRange()
                if Bool.random(using: &generator) {
                    ranges.insert(range)
                    bytes.formUnion(range)
                } else {
                    ranges.remove(range)
                    bytes.subtract(range)
                }
                #expect(Set(ranges.ranges.flatMap { $0 }) == bytes)
                // Sorted, disjoint, not touching, none empty.
                #expect(zip(ranges.ranges, ranges.ranges.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound })
                #expect(ranges.ranges.allSatisfy { !$0.isEmpty })
                let probe = randomRange()
                #expect(Set(ranges.intersection(probe).ranges.flatMap { $0 }) == bytes.intersection(probe))
                #expect(ranges.intersection(probe).ranges.allSatisfy { !$0.isEmpty })
                #expect(ranges.overlaps(probe) == !bytes.isDisjoint(with: probe))
                #expect(ranges.contains(probe) == bytes.isSuperset(of: probe))
            }
        }
    }
}
