import Foundation
import TestServers

/// The fixture tree as a WebDAV server can serve it: `FixtureTree` without its symlinks (WebDAV has
/// none), readable and writable by the server's user, with the 1 GiB file hard-linked rather than
/// copied (and so left at its mode, which the fixture's own tests check). Built once per run next to
/// the fixture; the tests compare the mount with this tree.
enum WebDAVFixtureTree {
    static func path() async throws -> String { try await built.value }

    /// The first caller starts the build; every caller awaits the same one.
    private static let built = Task {
        let source = try await FixtureTree.path()
        return try await onOwnThread { try build(from: source) }
    }

    private static func build(from source: String) throws -> String {
        let root = TestRoot.path + "/fixture-webdav-" + FixtureTree.version
        let marker = root + ".complete"
        // Test runs keep their files in a private folder; the server's user must reach the tree.
        defer { try? WebDAVTestServer.open(URL(fileURLWithPath: root), contents: false) }
        if FileManager.default.fileExists(atPath: marker) { return root }
        let script = """
            set -e
            rm -rf --one-file-system "$2"
            mkdir -p "$2"
            tar -C "$1" --exclude="./$3" -cf - . | tar -C "$2" -xpf -
            ln "$1/$3" "$2/$3"
            find "$2" -type l -delete
            find "$2" ! -path "$2/$3" -exec chmod a+rwX {} +
            """
        let output = Command.bash(script, source, root, FixtureTree.bigFile, timeout: .seconds(300)).runBlocking()
        guard output.succeeded else { throw MountTestFailure("cannot build the WebDAV fixture: \(output)") }
        _ = FileManager.default.createFile(atPath: marker, contents: nil)
        return root
    }
}
