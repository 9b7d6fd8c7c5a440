import FileProviderKit
import Foundation

/// The tree `ProviderConformance` expects on the remote, described once so a test can put it
/// there — into an `InMemoryProvider`, or into a folder for a folder-backed provider — and the
/// suite can check every listing and every byte against it.
///
/// The standard tree has nested directories, an empty file, a file of a few MiB of deterministic
/// non-repeating bytes, a symlink, names with spaces, non-ASCII text, a leading dash and the full
/// 255 bytes, a directory with more entries than a small page, and an empty `scratch` directory
/// in which the suite's mutating checks create and remove their own items.
public struct ConformanceFixture: Sendable {
    /// What one path of the fixture holds.
    public enum Node: Sendable, Hashable {
        case file([UInt8])
        case directory
        case symlink(target: String)
    }

    /// One item of the tree: a slash-separated path from the root and what is there.
    public struct Entry: Sendable, Hashable {
        public var path: String
        public var node: Node

        public init(path: String, node: Node) {
            self.path = path
            self.node = node
        }

        /// The last path component: the item's filename.
        public var name: String { String(path.split(separator: "/").last ?? "") }

        /// The path of the directory holding the item ("" for the root).
        public var parentPath: String { path.split(separator: "/").dropLast().joined(separator: "/") }
    }

    /// The directory the mutating checks work in; its contents are not compared.
    public static let scratchPath = "scratch"
    /// The directory with many entries, listed with small page sizes.
    public static let crowdedPath = "crowded"
    /// The large file, fetched in part with several alignments.
    public static let largeFilePath = "big.bin"
    /// The empty file.
    public static let emptyFilePath = "docs/empty.txt"

    /// Every item, parents before their children.
    public let entries: [Entry]
    /// Whether the remote has symlinks: the tree holds one, and `createItems` creates one. A
    /// remote without them (WebDAV) must refuse to create one with `featureUnsupported`.
    public let hasSymlinks: Bool

    /// The standard tree (see the type's description).
    public static let standard = ConformanceFixture()

    /// The standard tree without its symlink, for remotes that have none.
    public static let withoutSymlinks = ConformanceFixture(hasSymlinks: false)

    /// The standard tree with a large file of `largeFileSize` bytes and `crowdedEntries` files in
    /// the crowded directory.
    public init(largeFileSize: Int = 3 * 1024 * 1024 + 12_345, crowdedEntries: Int = 150, hasSymlinks: Bool = true) {
        self.hasSymlinks = hasSymlinks
        var entries: [Entry] = [
            Entry(path: "docs", node: .directory),
            Entry(path: "docs/readme.txt", node: .file(Array("Hello from the fpfs conformance fixture.\n".utf8))),
            Entry(path: Self.emptyFilePath, node: .file([])),
            Entry(path: "docs/nested", node: .directory),
            Entry(path: "docs/nested/deep", node: .directory),
            Entry(path: "docs/nested/deep/leaf.txt", node: .file(Array("leaf\n".utf8))),
            Entry(path: Self.largeFilePath, node: .file(Self.pattern(count: largeFileSize, seed: 1))),
            Entry(path: "name with spaces.txt", node: .file(Array("spaces\n".utf8))),
            Entry(path: "ünïcödé 日本語.txt", node: .file(Array("unicode\n".utf8))),
            Entry(path: "-leading-dash", node: .file(Array("dash\n".utf8))),
            Entry(path: String(repeating: "n", count: Filename.maximumLength - 4) + ".txt", node: .file([0x0A])),
            Entry(path: "link-to-readme", node: .symlink(target: "docs/readme.txt")),
            Entry(path: Self.crowdedPath, node: .directory),
            Entry(path: Self.scratchPath, node: .directory),
        ]
        if !hasSymlinks { entries.removeAll { if case .symlink = $0.node { true } else { false } } }
        for index in 0..<crowdedEntries {
            let name = "entry-" + String(repeating: "0", count: max(0, 3 - String(index).count)) + String(index)
            entries.append(Entry(path: "\(Self.crowdedPath)/\(name)", node: .file(Array("entry \(index)\n".utf8))))
        }
        self.entries = entries
    }

    /// Deterministic bytes without a short period, so a misplaced block never compares equal.
    public static func pattern(count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        var bytes = [UInt8]()
        bytes.reserveCapacity(count + 8)
        while bytes.count < count {
            // SplitMix64: cheap, and every 8-byte word differs from its neighbours.
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = (state ^ (state >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            mixed ^= mixed >> 31
            withUnsafeBytes(of: mixed.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return Array(bytes.prefix(count))
    }

    /// The entry at a path.
    public func entry(atPath path: String) -> Entry? { entries.first { $0.path == path } }

    /// The entries directly inside the directory at `path` ("" for the root).
    public func children(ofPath path: String) -> [Entry] { entries.filter { $0.parentPath == path } }

    /// Puts the tree into an in-memory remote.
    public func add(to provider: InMemoryProvider) throws {
        for entry in entries {
            switch entry.node {
            case .file(let contents): try provider.addFile(path: entry.path, contents: contents)
            case .directory: try provider.addDirectory(path: entry.path)
            case .symlink(let target): try provider.addSymlink(path: entry.path, target: target)
            }
        }
    }

    /// Writes the tree into an existing directory, for providers backed by a folder.
    public func materialize(in directory: URL) async throws {
        let entries = entries
        try await BlockingIO.run {
            let files = FileManager.default
            for entry in entries {
                let url = directory.appending(path: entry.path)
                switch entry.node {
                case .file(let contents): try Data(contents).write(to: url)
                case .directory: try files.createDirectory(at: url, withIntermediateDirectories: true)
                case .symlink(let target): try files.createSymbolicLink(atPath: url.path, withDestinationPath: target)
                }
            }
        }
    }
}
