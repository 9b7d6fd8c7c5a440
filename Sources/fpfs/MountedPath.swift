import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A path the user named, inside an fpfs mount: the mount's root (for its control socket) and the
/// item's inode number there (fpfs inodes are the daemon's own, so stat gives them).
struct MountedPath {
    let path: String
    let mountpoint: String
    let inode: UInt64

    /// Finds `path`'s fpfs mount in /proc/mounts (the deepest one holding it) and its inode;
    /// fails with a message naming the path when it does not exist or is not in an fpfs mount.
    init(_ path: String) throws {
        // Both calls go to the daemon when the path is in a mount, so they are bounded.
        let found = BoundedCall.run(seconds: BoundedCall.daemonSeconds) {
            () -> Result<(real: String, inode: UInt64), CommandFailure> in
            guard let resolved = realpath(path, nil) else {
                return .failure(CommandFailure("cannot find '\(path)': \(String(cString: strerror(errno)))"))
            }
            let real = String(cString: resolved)
            free(resolved)
            var status = stat()
            guard lstat(real, &status) == 0 else {
                return .failure(CommandFailure("cannot stat '\(path)': \(String(cString: strerror(errno)))"))
            }
            return .success((real, UInt64(status.st_ino)))
        }
        guard let found else {
            throw CommandFailure(
                "'\(path)' does not answer (a request to its mount waited \(BoundedCall.daemonSeconds) s)")
        }
        let (real, inode) = try found.get()
        let mount = MountTable.mounts().filter { mount in
            mount.type == "fuse.fpfs"
                && (real == mount.mountpoint || real.hasPrefix(mount.mountpoint == "/" ? "/" : mount.mountpoint + "/"))
        }.max { $0.mountpoint.count < $1.mountpoint.count }
        guard let mount else { throw CommandFailure("'\(path)' is not in an fpfs mount") }
        self.path = path
        self.mountpoint = mount.mountpoint
        self.inode = inode
    }

    /// Sends `verb` with the inodes of `paths` to each of their mounts' daemons; returns each
    /// mount's answer with the paths it was about, in the order given.
    static func send(_ verb: String, for paths: [MountedPath]) throws -> [(paths: [MountedPath], answer: Data)] {
        var order: [String] = []
        var byMount: [String: [MountedPath]] = [:]
        for path in paths {
            if byMount[path.mountpoint] == nil { order.append(path.mountpoint) }
            byMount[path.mountpoint, default: []].append(path)
        }
        return try order.map { mountpoint in
            let group = byMount[mountpoint] ?? []
            let answer = try ControlClient.send(
                ([verb] + group.map { String($0.inode) }).joined(separator: " "), to: mountpoint)
            if let failure = try? JSONDecoder().decode([String: String].self, from: answer),
                let message = failure["error"]
            {
                throw CommandFailure("the daemon of \(mountpoint) refused \(verb): \(message)")
            }
            return (group, answer)
        }
    }
}
