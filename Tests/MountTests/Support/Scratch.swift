import Foundation
import TestServers

#if canImport(Glibc)
    import Glibc
#endif

/// A private directory for one test, with an empty `mnt/`, a `cache/` and a `remote/` inside.
///
/// `remove()` belongs in a `defer`: it first lazily unmounts anything still mounted beneath the
/// directory (a test that failed half-way), and deletes without crossing into another file system,
/// so a mount that refuses to go away is never walked into.
final class Scratch: Sendable {
    let path: String

    var remote: String { path + "/remote" }
    var mountpoint: String { path + "/mnt" }
    var cache: String { path + "/cache" }

    init() throws {
        var template = Array("\(TestRoot.path)/test.XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw MountTestFailure("cannot create a directory under \(TestRoot.path): errno \(errno)")
        }
        path = String(cString: made)
        for directory in [remote, mountpoint] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
    }

    /// Unmounts whatever is left beneath the directory, then deletes it.
    func remove() {
        for entry in MountTable.entries(under: path).reversed() {
            _ = Command(["fusermount3", "-u", "-z", entry.mountpoint], timeout: .seconds(20)).runBlocking()
        }
        if MountTable.entries(under: path).isEmpty {
            _ = Command(["rm", "-rf", "--one-file-system", path], timeout: .seconds(120)).runBlocking()
        }
    }

    /// Writes `contents` to `relative` under `remote/`, creating folders on the way.
    func writeRemote(_ relative: String, _ contents: String) throws {
        let url = URL(fileURLWithPath: remote + "/" + relative)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: url)
    }

    /// Lets a WebDAV server's own user (Apache's `www-data`) reach `remote/` and read and write
    /// everything in it.
    func openRemoteToServers() throws {
        try WebDAVTestServer.open(URL(fileURLWithPath: remote))
    }
}
