#if canImport(Glibc)
    import Glibc
#endif

/// Numbers byte strings in the order they are first added, and finds a string's number from bytes
/// the caller only borrows.
///
/// The XML parser looks up every tag's name, prefix and namespace here: a multistatus repeats a
/// dozen or two of them thousands of times. A `Dictionary` needs its key as a value of its own
/// (a slice that keeps the input alive, counted in and out for every tag) and hashes it with a
/// seeded SipHash; this hashes the borrowed bytes with FNV-1a into an open-addressed table and
/// compares the bytes of the one or two entries it probes.
struct SpellingIndex {
    /// The strings by number.
    private(set) var spellings: [[UInt8]] = []
    /// Numbers by hash, at a power-of-two count kept at least twice the entries; -1 is empty.
    private var slots = [Int](repeating: -1, count: 16)

    /// The number of `bytes`, if they were added.
    func number(of bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var slot = Self.hash(bytes) & (slots.count - 1)
        while slots[slot] >= 0 {
            if Self.equal(spellings[slots[slot]], bytes) { return slots[slot] }
            slot = (slot + 1) & (slots.count - 1)
        }
        return nil
    }

    /// Adds `bytes` (not already added) and returns their number.
    mutating func add(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        spellings.append(Array(bytes))
        if spellings.count * 2 > slots.count {
            slots = [Int](repeating: -1, count: slots.count * 2)
            for number in spellings.indices { place(number) }
        } else {
            place(spellings.count - 1)
        }
        return spellings.count - 1
    }

    /// Puts entry `number` in the first empty slot from its hash's.
    private mutating func place(_ number: Int) {
        let slot = spellings[number].withUnsafeBufferPointer { Self.hash($0) }
        var index = slot & (slots.count - 1)
        while slots[index] >= 0 { index = (index + 1) & (slots.count - 1) }
        slots[index] = number
    }

    /// FNV-1a, 64 bits.
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int(truncatingIfNeeded: hash)
    }

    /// Whether `stored` spells `bytes`.
    static func equal(_ stored: [UInt8], _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard stored.count == bytes.count else { return false }
        return stored.withUnsafeBufferPointer { stored in
            stored.isEmpty || memcmp(stored.baseAddress!, bytes.baseAddress!, stored.count) == 0
        }
    }
}
