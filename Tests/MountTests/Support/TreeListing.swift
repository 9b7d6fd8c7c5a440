import Foundation

/// The views of a folder tree that must come out the same on the mount and on its source, each
/// taken with the ordinary tool and normalized only where the two file systems may rightly differ:
/// `ls -lR` and `stat` ignore the size and link count of folders (a file system's own bookkeeping,
/// not content); every view leaves out the root itself and sorts bytewise, because listing order
/// is not part of any contract. Names are compared as bytes, so an NFC/NFD mix-up shows.
enum TreeListing: String, CaseIterable, Sendable, CustomStringConvertible {
    case lsRecursive = "ls -lR"
    case find = "find"
    case stat = "stat"
    case sha256sum = "sha256sum"
    /// `stat` without modes and with whole-second mtimes: what a WebDAV server keeps.
    case statWithoutModes = "stat without modes"
    /// `sha256sum` of every file below 100 MiB, for views where the 1 GiB file is read elsewhere.
    case sha256sumOfSmallFiles = "sha256sum of small files"

    /// The views of a folder remote, which keeps everything.
    static let allCases: [TreeListing] = [.lsRecursive, .find, .stat, .sha256sum]
    /// The views of a WebDAV remote, which keeps no modes and no symlinks.
    static let webDAVCases: [TreeListing] = [.find, .statWithoutModes, .sha256sumOfSmallFiles]

    var description: String { rawValue }

    /// The normalized lines of this view of the tree at `root`.
    func lines(of root: String) async throws -> [String] {
        switch self {
        case .lsRecursive:
            let output = try await Command(
                ["ls", "-lRAn", "--quoting-style=escape", "--time-style=+%s", "."], in: root, timeout: .seconds(120)
            ).check()
            return output.lines.filter { !$0.hasPrefix("total ") }.map(Self.normalizeLongListing)
        case .find:
            let output = try await Command(
                ["find", ".", "-mindepth", "1", "-printf", "%y %p -> %l\\0"], in: root, timeout: .seconds(120)
            ).check()
            return Self.sortedBytewise(Self.records(output.stdout))
        case .stat, .statWithoutModes:
            let format = self == .stat ? "%F|%s|%a|%Y|%n" : "%F|%s|%Y|%n"
            let output = try await Command.bash(
                "find . -mindepth 1 -print0 | xargs -0 -r stat --printf \"$1\\0\" --", format, in: root,
                timeout: .seconds(120)
            ).check()
            return Self.sortedBytewise(Self.records(output.stdout).map(Self.normalizeStat))
        case .sha256sum, .sha256sumOfSmallFiles:
            let sizeFilter = self == .sha256sum ? "" : "-size -100M"
            let output = try await Command.bash(
                "find . -type f \(sizeFilter) -print0 | sort -z | xargs -0 -r sha256sum --", in: root,
                timeout: .seconds(900)
            ).check()
            return output.lines
        }
    }

    static func sortedBytewise(_ lines: [String]) -> [String] {
        lines.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    private static func records(_ text: String) -> [String] {
        text.split(separator: "\0").map(String.init)
    }

    /// `mode links uid gid size mtime name`: links go, folders lose their size, the column padding
    /// goes.
    private static func normalizeLongListing(_ line: String) -> String {
        var fields: [Substring] = []
        var rest = Substring(line)
        while fields.count < 6 {
            rest = rest.drop { $0 == " " }
            guard let end = rest.firstIndex(of: " ") else { return line }  // a "./folder:" header
            fields.append(rest[..<end])
            rest = rest[end...].dropFirst()
        }
        // Remotes have no hard links: the mount counts one per file, whatever links the source
        // has (the WebDAV fixture links the big file while other tests run).
        fields[1] = "-"
        if fields[0].hasPrefix("d") { fields[4] = "-" }
        return fields.joined(separator: " ") + " " + rest
    }

    /// `type|size|…|name`: folders lose their size.
    private static func normalizeStat(_ record: String) -> String {
        var fields = record.split(separator: "|", omittingEmptySubsequences: false)
        if fields.first == "directory", fields.count >= 4 { fields[1] = "-" }
        return fields.joined(separator: "|")
    }
}
