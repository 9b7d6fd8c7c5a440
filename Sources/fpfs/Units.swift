import Foundation

/// Durations and sizes as users write them, like rclone: `500ms`, `30s`, `1.5m`, `2h`; `10G`,
/// `10GiB` (binary: powers of 1024), `10GB` (decimal: powers of 1000), any case.
enum Units {
    /// Seconds per unit of a duration.
    private static let durationUnits: [(suffix: String, seconds: Double)] = [
        ("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600),
    ]

    /// The seconds `text` stands for: a number and a unit, or a bare number taken in units of
    /// `bare` seconds. Nil for anything else (negative, inf, nan, an unknown unit).
    static func seconds(_ text: String, bare: Double) -> Double? {
        let lowered = text.lowercased()
        let (number, scale) =
            durationUnits.first { lowered.hasSuffix($0.suffix) && lowered.count > $0.suffix.count }
            .map { (lowered.dropLast($0.suffix.count), $0.seconds) } ?? (Substring(lowered), bare)
        guard number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let value = Double(number),
            value.isFinite
        else { return nil }
        return value * scale
    }

    /// Bytes per unit of a size, by lowercased suffix: K, KiB as 1024, KB as 1000, up to E.
    private static let sizeUnits: [(suffix: String, bytes: UInt64)] = {
        var units: [(String, UInt64)] = []
        for (power, letter) in ["k", "m", "g", "t", "p", "e"].enumerated() {
            let exponent = UInt64(power + 1)
            var decimal: UInt64 = 1
            for _ in 0..<exponent { decimal *= 1000 }
            units += [("\(letter)ib", 1 << (10 * exponent)), ("\(letter)b", decimal), (letter, 1 << (10 * exponent))]
        }
        return units + [("b", 1)]
    }()

    /// The bytes `text` stands for (a whole or decimal number with an optional unit); nil when it
    /// is not a size or does not fit in 64 bits.
    static func bytes(_ text: String) -> UInt64? {
        let lowered = text.lowercased()
        let (number, scale) =
            sizeUnits.first { lowered.hasSuffix($0.suffix) && lowered.count > $0.suffix.count }
            .map { (lowered.dropLast($0.suffix.count), $0.bytes) } ?? (Substring(lowered), 1)
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }) else { return nil }
        if let whole = UInt64(number) {
            let (bytes, overflow) = whole.multipliedReportingOverflow(by: scale)
            return overflow ? nil : bytes
        }
        guard let value = Double(number), value.isFinite else { return nil }
        let bytes = (value * Double(scale)).rounded(.down)
        return bytes < 0x1p64 ? UInt64(bytes) : nil
    }

    /// "600 s", "1500 ms": a duration for a message.
    static func text(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return attoseconds == 0 ? "\(seconds) s" : "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000) ms"
    }
}
