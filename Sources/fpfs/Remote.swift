import FileProviderKit
import Foundation
import LocalProvider

/// The REMOTE argument of `fpfs mount`, parsed: which provider serves it, and how it is named in
/// /proc/mounts (`fpfs:NAME`) and in the default cache folder.
struct Remote: Sendable {
    enum Kind: Sendable {
        /// A folder on this machine, with the slow-remote options of its URL query.
        case folder(path: String, requestDelay: Duration, bandwidthLimit: UInt64?)
    }

    let kind: Kind
    /// The remote as the user gave it, made absolute for folders.
    let name: String

    /// Parses a path, `file://` URL, or one of the planned schemes; throws a message naming the problem.
    init(parsing argument: String) throws {
        guard !argument.isEmpty else { throw CommandFailure("the remote is empty") }
        if let schemeEnd = argument.range(of: "://") {
            let scheme = argument[..<schemeEnd.lowerBound].lowercased()
            switch scheme {
            case "file":
                guard let components = URLComponents(string: argument) else {
                    throw CommandFailure("'\(argument)' is not a valid file:// URL")
                }
                guard components.host == nil || components.host == "" || components.host == "localhost" else {
                    throw CommandFailure("file:// URLs name a folder on this machine, not on '\(components.host!)'")
                }
                var delay = Duration.zero
                var bandwidth: UInt64?
                for item in components.queryItems ?? [] {
                    let value = item.value ?? ""
                    switch item.name {
                    case "delay": delay = try Self.parseDuration(value)
                    case "bandwidth": bandwidth = try Self.parseByteCount(value, option: "bandwidth")
                    default:
                        throw CommandFailure(
                            "unknown option '\(item.name)' in the file:// URL (known: delay, bandwidth)")
                    }
                }
                let path = components.percentEncodedPath.removingPercentEncoding ?? components.path
                try self.init(folder: path, name: "file://" + path, delay: delay, bandwidth: bandwidth)
            case "webdav", "webdavs", "s3":
                throw CommandFailure("\(scheme):// remotes are not supported by this build yet")
            default:
                throw CommandFailure(
                    "unknown URL scheme '\(scheme)' (use a folder path, file://, webdav://, webdavs:// or s3://)")
            }
        } else {
            let absolute = URL(fileURLWithPath: argument).standardizedFileURL.path
            try self.init(folder: absolute, name: absolute, delay: .zero, bandwidth: nil)
        }
    }

    private init(folder path: String, name: String, delay: Duration, bandwidth: UInt64?) throws {
        self.kind = .folder(path: path, requestDelay: delay, bandwidthLimit: bandwidth)
        self.name = name
    }

    /// Nil when the remote can be reached; otherwise why not. A folder that exists but is not a
    /// folder is not "unreachable" but wrong, and throws.
    func unreachableReason() throws -> String? {
        switch kind {
        case .folder(let path, _, _):
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                return "the remote folder '\(path)' does not exist"
            }
            guard isDirectory.boolValue else { throw CommandFailure("the remote '\(path)' is not a folder") }
            return nil
        }
    }

    /// A provider for this remote, keeping its own state in `stateDirectory`; an `OfflineProvider`
    /// when the remote cannot be reached.
    func makeProvider(stateDirectory: URL) throws -> any FileProvider {
        if let reason = try unreachableReason() { return OfflineProvider(reason: reason) }
        switch kind {
        case .folder(let path, let delay, let bandwidth):
            var options = LocalProvider.Options()
            options.requestDelay = delay
            options.bandwidthLimit = bandwidth
            options.stateDirectory = stateDirectory
            return try LocalProvider(root: URL(fileURLWithPath: path), options: options)
        }
    }

    /// "300ms", "2s", "1.5s" or a bare number of milliseconds.
    static func parseDuration(_ text: String) throws -> Duration {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            if let value = Double(text.dropLast(suffix.count)), value >= 0 {
                return .milliseconds(Int64(value * scale * 1000))
            }
        }
        if let value = Int64(text), value >= 0 { return .milliseconds(value) }
        throw CommandFailure("'\(text)' is not a duration (examples: 300ms, 2s)")
    }

    /// "1048576", "64KiB", "50MiB", "1GiB" (also K, M, G as powers of 1024).
    static func parseByteCount(_ text: String, option: String) throws -> UInt64 {
        let units: [(String, UInt64)] = [
            ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30),
        ]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            if let value = UInt64(text.dropLast(suffix.count)), value > 0 { return value * scale }
        }
        if let value = UInt64(text), value > 0 { return value }
        throw CommandFailure("'\(text)' is not a valid \(option) (examples: 1048576, 64KiB, 50MiB)")
    }
}
