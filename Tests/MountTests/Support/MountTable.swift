import Foundation

/// The kernel's table of mounts, /proc/mounts: what is mounted where, and as what.
enum MountTable {
    /// One line of /proc/mounts, with the octal escapes of spaces and the like decoded.
    struct Entry: Sendable, Equatable {
        var source: String
        var mountpoint: String
        var type: String
    }

    static func entries() -> [Entry] {
        guard let text = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count >= 3 else { return nil }
            return Entry(
                source: decode(fields[0]), mountpoint: decode(fields[1]), type: decode(fields[2]))
        }
    }

    /// Entries whose mountpoint is exactly `mountpoint`.
    static func entries(at mountpoint: String) -> [Entry] {
        entries().filter { $0.mountpoint == mountpoint }
    }

    /// Entries whose mountpoint is `directory` or lies beneath it, in mount order.
    static func entries(under directory: String) -> [Entry] {
        entries().filter { $0.mountpoint == directory || $0.mountpoint.hasPrefix(directory + "/") }
    }

    static func isMounted(_ mountpoint: String) -> Bool {
        !entries(at: mountpoint).isEmpty
    }

    /// Every fuse mount, for messages that show what was left behind.
    static func fuseEntries() -> [Entry] {
        entries().filter { $0.type.hasPrefix("fuse") }
    }

    /// The kernel writes space, tab, newline and backslash as `\040`, `\011`, `\012`, `\134`.
    private static func decode(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        let raw = Array(field.utf8)
        var index = 0
        while index < raw.count {
            if raw[index] == UInt8(ascii: "\\"), index + 3 < raw.count,
                let value = UInt8(String(decoding: raw[(index + 1)...(index + 3)], as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(raw[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
