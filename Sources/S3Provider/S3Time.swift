import FileProviderKit
import Foundation

/// The times S3 sends: ISO 8601 in listings (`2026-12-01T20:47:08.123Z`) and RFC 1123 in headers
/// (`Tue, 01 Dec 2026 20:47:08 GMT`). The `mtime` metadata is `S3ObjectMetadata`'s.
enum S3Time {
    static func parseISO8601(_ text: String) -> Timestamp? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T") else { return nil }
        func number(_ range: Range<Int>) -> Int? { Int(String(decoding: bytes[range], as: UTF8.self)) }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19)
        else { return nil }
        return timestamp(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func parseHTTPDate(_ text: String) -> Timestamp? {
        let words = text.split(separator: " ")
        guard words.count == 6, let day = Int(words[1]), let month = months.firstIndex(of: String(words[2])),
            let year = Int(words[3])
        else { return nil }
        let clock = words[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3 else { return nil }
        return timestamp(year: year, month: month + 1, day: day, hour: clock[0], minute: clock[1], second: clock[2])
    }

    private static func timestamp(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int)
        -> Timestamp?
    {
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else {
            return nil
        }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Timestamp(seconds: Int64(timegm(&parts)))
    }
}
