import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where a mount keeps its state: the folder given with --cache-dir, or one derived from the
/// remote's name and identity (an S3 remote's endpoint too), so that the same `fpfs mount` command
/// finds the same cache again.
enum CacheDirectory {
    static func `default`(for remote: Remote) -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_CACHE_HOME"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: environment["HOME"] ?? "/root").appendingPathComponent(".cache")
        let digest = SHA256.hash(data: Data(remote.identity.utf8)).prefix(6).map { String(format: "%02x", $0) }.joined()
        let slug = String(
            remote.name.map { $0.isLetter || $0.isNumber ? $0 : "-" }.drop { $0 == "-" }.suffix(40))
        return base.appendingPathComponent("fpfs").appendingPathComponent("\(slug)-\(digest)")
    }

    /// The control socket's path: in the cache folder when it fits a socket address (108 bytes),
    /// otherwise under /tmp, named by a digest of the cache folder.
    static func controlSocket(in directory: URL) -> String {
        let inside = directory.appendingPathComponent("control.sock").path
        if inside.utf8.count < 100 { return inside }
        let digest = SHA256.hash(data: Data(directory.path.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        return "/tmp/fpfs-\(getuid())-\(digest).sock"
    }

    /// The default cache bound: a tenth of the disk that holds the cache folder (at least 1 MiB).
    static func defaultCacheSize(of directory: URL) -> UInt64 {
        var disk = statvfs()
        guard statvfs(directory.path, &disk) == 0 else { return 1 << 30 }
        return max(UInt64(disk.f_blocks) * UInt64(disk.f_frsize) / 10, 1 << 20)
    }
}
