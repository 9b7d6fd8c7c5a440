import FileProviderKit
import Foundation

/// The date formats WebDAV servers send: RFC 1123 (`getlastmodified`, `Last-Modified`), its two
/// obsolete forms, and ISO 8601 (`creationdate`). Parsed by hand: a listing of 100 000 entries
/// parses 100 000 dates.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        .map { Array($0.utf8) }
    private static let gmt = Array("gmt".utf8)

    /// "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT" or "Sun Nov  6 08:49:37 1994".
    /// Read as bytes: a walk parses one per item, and strings for its words were most of the cost.
    static func parse(_ text: String) -> Timestamp? {
        if let fixed = text.utf8.withContiguousStorageIfAvailable(parseFixdate), let fixed { return fixed }
        let bytes = Array(text.utf8)
        let words = bytes.split(whereSeparator: {
            $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "-")
        })
        let (day, month, year, time): (ArraySlice<UInt8>, ArraySlice<UInt8>, ArraySlice<UInt8>, ArraySlice<UInt8>)
        switch words.count {
        case 6 where lowercased(words[5]) == Array("gmt".utf8) || lowercased(words[5]) == Array("utc".utf8):
            (day, month, year, time) = (words[1], words[2], words[3], words[4])
        case 5:
            (day, month, year, time) = (words[2], words[1], words[4], words[3])
        default:
            return nil
        }
        let clock = time.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false).compactMap(number)
        guard let monthIndex = months.firstIndex(of: lowercased(month)), var yearNumber = number(year),
            let dayNumber = number(day), clock.count == 3
        else { return nil }
        if yearNumber < 100 { yearNumber += yearNumber < 70 ? 2000 : 1900 }
        return timestamp(
            year: yearNumber, month: monthIndex + 1, day: dayNumber, hour: clock[0], minute: clock[1],
            second: clock[2], nanoseconds: 0, offsetSeconds: 0)
    }

    /// "Sun, 06 Nov 1994 08:49:37 GMT", the form servers send today, read at its fixed places
    /// without a copy; nil for anything else, which the general reading takes.
    private static func parseFixdate(_ bytes: UnsafeBufferPointer<UInt8>) -> Timestamp? {
        func digits(_ start: Int, _ count: Int) -> Int? {
            var value = 0
            for byte in bytes[start..<(start + count)] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        /// Whether the three letters at `start` are `word` (lower case), in any case.
        func spells(_ start: Int, _ word: [UInt8]) -> Bool {
            word.indices.allSatisfy { bytes[start + $0] | 0x20 == word[$0] }
        }
        guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), bytes[16] == UInt8(ascii: " "),
            bytes[19] == UInt8(ascii: ":"), bytes[22] == UInt8(ascii: ":"),
            [4, 7, 11, 25].allSatisfy({ bytes[$0] == UInt8(ascii: " ") }), spells(26, gmt),
            let month = months.firstIndex(where: { spells(8, $0) }),
            let day = digits(5, 2), let year = digits(12, 4), let hour = digits(17, 2), let minute = digits(20, 2),
            let second = digits(23, 2)
        else { return nil }
        return timestamp(
            year: year, month: month + 1, day: day, hour: hour, minute: minute, second: second, nanoseconds: 0,
            offsetSeconds: 0)
    }

    /// ASCII letters of `word` in lower case.
    private static func lowercased(_ word: ArraySlice<UInt8>) -> [UInt8] {
        word.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 | 0x20 : $0 }
    }

    /// The value of a run of one to nine decimal digits.
    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        guard (1...9).contains(digits.count),
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// "2024-01-02T03:04:05Z", with optional fraction and a `±hh:mm` offset instead of `Z`.
    static func parseISO8601(_ text: String) -> Timestamp? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            return Self.number(bytes[range])
        }
        guard bytes.count >= 19, let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19)
        else { return nil }
        var index = 19
        var nanoseconds = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                if digits < 9 { nanoseconds = nanoseconds * 10 + Int(bytes[index] - UInt8(ascii: "0")) }
                digits += 1
                index += 1
            }
            for _ in min(digits, 9)..<9 { nanoseconds *= 10 }
        }
        var offset = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            guard let hours = number((index + 1)..<(index + 3)), let minutes = number((index + 4)..<(index + 6)) else {
                return nil
            }
            offset = (hours * 3600 + minutes * 60) * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
        }
        return timestamp(
            year: year, month: month, day: day, hour: hour, minute: minute, second: second,
            nanoseconds: nanoseconds, offsetSeconds: offset)
    }

    private static func timestamp(
        year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, nanoseconds: Int, offsetSeconds: Int
    ) -> Timestamp? {
        guard (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute),
            (0...60).contains(second)
        else { return nil }
        // Days from the civil date (Howard Hinnant's algorithm), so no calendar object is needed.
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second - offsetSeconds)
        return Timestamp(seconds: seconds, nanoseconds: UInt32(nanoseconds))
    }
}
