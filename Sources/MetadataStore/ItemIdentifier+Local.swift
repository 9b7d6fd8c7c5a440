import FileProviderKit

extension ItemIdentifier {
    private static let localPrefix = "fpfs.local."

    /// A new identifier for an item made here, used until the remote gives it its own (ARCHITECTURE §4).
    /// Its 128 random bits come from the system's generator (`getrandom`): Foundation's `UUID()`
    /// opens and reads /dev/urandom on Linux at every call, a file open on a cooperative thread for
    /// every file or folder made.
    public static func makeLocal() -> ItemIdentifier {
        var generator = SystemRandomNumberGenerator()
        let bits = (generator.next() as UInt64, generator.next() as UInt64)
        return ItemIdentifier(localPrefix + hex(bits.0) + hex(bits.1))
    }

    /// `value` as 16 hexadecimal digits.
    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// True for an identifier the remote has not given yet.
    public var isLocal: Bool { rawValue.hasPrefix(Self.localPrefix) }
}
