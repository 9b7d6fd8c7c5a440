/// How many references the kernel holds to an inode: raised by lookup and readdirplus, lowered by
/// forget. Going below zero is a bug in the bookkeeping, so it traps.
struct LookupCount: Hashable {
    private(set) var value: UInt64 = 0

    mutating func increment() { value += 1 }

    /// Lowers the count by `count`; returns true when it reached zero.
    mutating func decrement(by count: UInt64) -> Bool {
        precondition(count <= value, "forget of \(count) exceeds lookup count \(value)")
        value -= count
        return value == 0
    }
}
