import Foundation
import TestServers

#if canImport(Glibc)
    import Glibc
#endif

/// The source folder of the tests that only read: generated once per run (or reused from an
/// earlier run when its `.complete` marker is there) and shared, because the 1 GiB file in it
/// costs seconds to write.
///
/// It holds what trips filesystems up: nested and empty folders, empty files, a file over 1 GiB
/// whose length is not a multiple of any block size, relative, absolute, dangling, looping and
/// folder symlinks, names with spaces, unicode (NFC and NFD spellings of the same word side by
/// side), a leading dash, shell metacharacters, 255-byte names, chosen permission bits, mtimes
/// with nanoseconds, and a folder with enough entries to need several listing pages.
/// Names are written as raw bytes through libc, so nothing normalizes them on the way.
enum FixtureTree {
    static let version = "v1"
    static let bigFile = "big/one-GiB-plus.bin"
    static let bigFileSize = (1 << 30) + 12_345
    static let mediumFile = "medium.bin"
    static let mediumFileSize = (3 << 20) + 7
    static let smallFile = "nested/a/b/c/deep.txt"
    static let smallFileContents = "deep in the tree\n"
    static let manyCount = 300

    /// The root of the tree, built on first use.
    static func path() async throws -> String { try await built.value }

    /// The first caller starts the build; every caller awaits the same one.
    private static let built = Task { try await onOwnThread(build) }

    private static var files: [(path: String, contents: String, mode: mode_t)] {
        let longName = String(repeating: "n", count: 251) + ".txt"
        let longUnicodeName = String(repeating: "\u{E9}", count: 127) + "x"
        var files: [(String, String, mode_t)] = [
            ("README.txt", "fpfs mount test fixture\n", 0o644),
            ("empty.txt", "", 0o644),
            (".hidden", "a hidden file\n", 0o644),
            (".hidden-dir/inside.txt", "inside a hidden folder\n", 0o644),
            (smallFile, smallFileContents, 0o644),
            ("nested/a/b/empty", "", 0o644),
            ("nested/x/y.txt", "y\n", 0o644),
            ("with space.txt", "a name with a space\n", 0o644),
            ("dir with spaces/inner file.txt", "inside a folder with spaces\n", 0o644),
            ("  leading and trailing spaces  ", "spaces around\n", 0o644),
            ("-leading-dash.txt", "a name that looks like an option\n", 0o644),
            ("--", "two dashes\n", 0o644),
            ("unicode/\u{FC}n\u{EF}c\u{F8}d\u{E9}-\u{65E5}\u{672C}\u{8A9E}-\u{1F600}.txt", "unicode\n", 0o644),
            ("unicode/caf\u{E9}.txt", "precomposed (NFC)\n", 0o644),
            ("unicode/cafe\u{301}.txt", "decomposed (NFD)\n", 0o644),
            ("unicode/" + longUnicodeName, "a 255-byte name in two-byte characters\n", 0o644),
            (longName, "a 255-byte name\n", 0o644),
            (String(repeating: "d", count: 255) + "/inside-a-255-byte-folder.txt", "long folder\n", 0o644),
            ("odd/quote'double\"back\\slash", "quotes and a backslash\n", 0o644),
            ("odd/semi;colon&amp|pipe", "shell metacharacters\n", 0o644),
            ("odd/star*question?[brackets]", "glob characters\n", 0o644),
            ("odd/percent%s%n", "printf directives\n", 0o644),
            ("odd/#hash", "a hash\n", 0o644),
            ("odd/tab\there", "a tab\n", 0o644),
            ("modes/private", "0600\n", 0o600),
            ("modes/exec", "#!/bin/sh\necho hi\n", 0o755),
            ("modes/readonly", "0444\n", 0o444),
            ("modes/group", "0640\n", 0o640),
            ("modes/dir-0700/inside.txt", "in a private folder\n", 0o644),
            ("times/2001", "mtime 2001-09-09 with nanoseconds\n", 0o644),
            ("times/2100", "mtime in 2100\n", 0o644),
            ("times/almost-next-second", "mtime .999999999\n", 0o644),
        ]
        for index in 0..<manyCount {
            files.append(("many/f-\(String(format: "%03d", index))", "file \(index) of many\n", 0o644))
        }
        return files
    }

    private static let symlinks: [(path: String, target: String)] = [
        ("links/relative", "../nested/a/b/c/deep.txt"),
        ("links/absolute", "/etc/os-release"),
        ("links/dangling", "no/such/target"),
        ("links/absolute-dangling", "/nonexistent/fpfs/target"),
        ("links/to-dir", "../nested"),
        ("links/loop", "loop"),
        ("nested/a/up", "../../README.txt"),
    ]

    private static let emptyFolders = ["nested/a/empty-dir", "empty-dir"]

    /// (path, seconds, nanoseconds); folders last, after their contents stopped changing them.
    private static let mtimes: [(path: String, seconds: Int, nanoseconds: Int)] = [
        ("times/2001", 1_000_000_000, 123_456_789),
        ("times/2100", 4_102_444_800, 0),
        ("times/almost-next-second", 1_600_000_000, 999_999_999),
        ("times", 1_234_567_890, 500_000_000),
    ]

    private static let folderModes: [(path: String, mode: mode_t)] = [("modes/dir-0700", 0o700), ("", 0o755)]

    private static func build() throws -> String {
        let root = TestRoot.path + "/fixture-" + version
        let marker = root + ".complete"
        if FileManager.default.fileExists(atPath: marker) { return root }
        _ = Command(["rm", "-rf", "--one-file-system", root], timeout: .seconds(120)).runBlocking()
        try makeFolders(root)

        for file in files {
            try makeFolders(parent(of: root + "/" + file.path))
            try write(file.contents, to: root + "/" + file.path, mode: file.mode)
        }
        for folder in emptyFolders { try makeFolders(root + "/" + folder) }
        for link in symlinks {
            try makeFolders(parent(of: root + "/" + link.path))
            guard symlink(link.target, root + "/" + link.path) == 0 else {
                throw MountTestFailure("cannot create symlink \(link.path): errno \(errno)")
            }
        }
        try makeFolders(root + "/big")
        try PatternFile.write(to: root + "/" + bigFile, size: bigFileSize, seed: 0x6670_6673)
        try PatternFile.write(to: root + "/" + mediumFile, size: mediumFileSize, seed: 2)
        for entry in mtimes {
            var times = [
                timespec(tv_sec: entry.seconds, tv_nsec: entry.nanoseconds),
                timespec(tv_sec: entry.seconds, tv_nsec: entry.nanoseconds),
            ]
            guard utimensat(AT_FDCWD, root + "/" + entry.path, &times, AT_SYMLINK_NOFOLLOW) == 0 else {
                throw MountTestFailure("cannot set the mtime of \(entry.path): errno \(errno)")
            }
        }
        for folder in folderModes {
            guard chmod(folder.path.isEmpty ? root : root + "/" + folder.path, folder.mode) == 0 else {
                throw MountTestFailure("cannot chmod \(folder.path): errno \(errno)")
            }
        }
        try write("", to: marker, mode: 0o644)
        return root
    }

    private static func parent(of path: String) -> String {
        String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
    }

    /// `mkdir -p` through libc, so folder names keep their exact bytes.
    private static func makeFolders(_ path: String) throws {
        var current = ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            current += "/" + component
            if mkdir(current, 0o755) != 0, errno != EEXIST {
                throw MountTestFailure("cannot create folder \(current): errno \(errno)")
            }
        }
    }

    private static func write(_ contents: String, to path: String, mode: mode_t) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw MountTestFailure("cannot create \(path): errno \(errno)") }
        defer { close(fd) }
        let bytes = Array(contents.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw MountTestFailure("cannot write \(path): errno \(errno)")
        }
        // open() applies the umask; the fixture wants the exact bits.
        guard fchmod(fd, mode) == 0 else { throw MountTestFailure("cannot chmod \(path): errno \(errno)") }
    }
}
