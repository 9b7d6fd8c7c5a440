import Foundation

/// Checks a mountpoint before mounting: it must be an existing, empty folder that nothing is
/// mounted on. A stale fpfs mount left by a killed daemon is cleared first.
enum Mountpoint {
    /// Returns the absolute path, or throws a message naming the problem.
    static func prepare(_ argument: String) throws -> String {
        let path = CommandLinePath.absolute(argument)
        if let mount = MountTable.mount(at: path) {
            guard mount.type == "fuse.fpfs" else {
                throw CommandFailure("'\(path)' is already mounted (\(mount.source), \(mount.type))")
            }
            switch MountTable.daemonState(at: path) {
            case .gone: break
            case .answering:
                throw CommandFailure("'\(path)' is already mounted (\(mount.source), \(mount.type))")
            case .notAnswering:
                throw CommandFailure(
                    "'\(path)' is already mounted (\(mount.source)) and its daemon does not answer; "
                        + "run `fpfs unmount \(path)` first")
            }
            if let failure = MountTable.fusermountUnmount(path, lazy: true) {
                throw CommandFailure("cannot clear the stale mount on '\(path)': \(failure)")
            }
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CommandFailure("the mountpoint '\(path)' does not exist")
        }
        guard isDirectory.boolValue else { throw CommandFailure("the mountpoint '\(path)' is not a folder") }
        let entries: [String]
        do {
            entries = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw CommandFailure("cannot read the mountpoint '\(path)': \(error.localizedDescription)")
        }
        guard entries.isEmpty else { throw CommandFailure("the mountpoint '\(path)' is not empty") }
        return path
    }
}
