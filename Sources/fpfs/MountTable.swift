import Foundation
import FuseKit

#if canImport(Glibc)
    import Glibc
#endif

/// What /proc/mounts says about a mountpoint, and the tools to clear a stale fpfs mount.
enum MountTable {
    struct Mount {
        let source: String
        let mountpoint: String
        let type: String
    }

    /// The mounts in /proc/mounts (octal escapes such as \040 decoded).
    static func mounts() -> [Mount] {
        guard let text = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { return nil }
            return Mount(
                source: MountTableField.unescaped(fields[0]), mountpoint: MountTableField.unescaped(fields[1]),
                type: String(fields[2]))
        }
    }

    /// The mount at `path`, if any (the last one wins, as the kernel stacks them).
    static func mount(at path: String) -> Mount? {
        mounts().last { $0.mountpoint == path }
    }

    /// How the daemon of the FUSE mount at `path` answers.
    enum DaemonState {
        case answering
        /// Gone: the mount is stale ("Transport endpoint is not connected").
        case gone
        /// No answer within the time asked for: the daemon is stopped or stuck.
        case notAnswering
    }

    /// Asks the daemon of the mount at `path` something it must answer itself, waiting at most
    /// `seconds`.
    static func daemonState(at path: String, seconds: Int = BoundedCall.daemonSeconds) -> DaemonState {
        // statfs, not stat: the kernel answers stat of the root from its attribute cache for a
        // minute after the daemon died, while statfs (statvfs) always goes to the daemon.
        let failure = BoundedCall.run(seconds: seconds) { () -> Int32 in
            var buffer = statvfs()
            return statvfs(path, &buffer) == 0 ? 0 : errno
        }
        switch failure {
        case nil: return .notAnswering
        case ENOTCONN: return .gone
        default: return .answering
        }
    }

    /// Runs `fusermount3 -u` (lazily with `lazy`) on `path`; returns its stderr when it fails.
    @discardableResult
    static func fusermountUnmount(_ path: String, lazy: Bool = false) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/fusermount3")
        process.arguments = (lazy ? ["-u", "-z"] : ["-u"]) + ["--", path]
        let errorPipe = Pipe()
        process.standardError = errorPipe
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return "cannot run fusermount3: \(error)"
        }
        let errorText = String(decoding: errorPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return process.terminationStatus == 0
            ? nil : errorText.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
