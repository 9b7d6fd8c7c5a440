import FileProviderKit
import Foundation

/// The name of a conflict copy (ARCHITECTURE §4): `NAME (conflict YYYY-MM-DD HHMMSS).EXT` beside the
/// original, in UTC so that the name does not depend on the daemon's time zone.
enum ConflictName {
    static func make(for name: Filename, at date: Date = Date()) -> Filename {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let stamp = String(
            format: "%04d-%02d-%02d %02d%02d%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0, parts.hour ?? 0,
            parts.minute ?? 0, parts.second ?? 0)
        let bytes = name.bytes
        // The extension starts at the last dot, unless that dot opens the name (".bashrc").
        let dot = bytes.lastIndex(of: UInt8(ascii: ".")).flatMap { $0 > 0 ? $0 : nil }
        let stem = dot.map { Array(bytes[..<$0]) } ?? bytes
        let suffix = dot.map { Array(bytes[$0...]) } ?? []
        let marker = Array(" (conflict \(stamp))".utf8)
        // Keep within the name length limit by shortening the stem.
        let room = Filename.maximumLength - marker.count - suffix.count
        return Filename(bytes: Array(stem.prefix(max(room, 1))) + marker + suffix)
    }
}
