import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Who may use a mount, and as whom its items show: the `--allow-other`, `--default-permissions`,
/// `--uid`, `--gid` and `--umask` options of `fpfs mount` (`-o allow_other,uid=…` in fstab).
struct MountAccessOptions: ParsableArguments {
    @Flag(
        help:
            "Let users other than the mounter use the mount (root only, unless /etc/fuse.conf has user_allow_other); with --default-permissions the modes shown are enforced."
    )
    var allowOther = false

    @Flag(help: "Let the kernel check every access against the owner and mode shown, as on a local disk.")
    var defaultPermissions = false

    @Option(parsing: .unconditional, help: "The owner shown for every item, a user id (default: the mounting user).")
    var uid: UInt32?

    @Option(parsing: .unconditional, help: "The group shown for every item, a group id (default: the mounting user's).")
    var gid: UInt32?

    @Option(
        parsing: .unconditional, help: "Mode bits taken from every item's mode, in octal (e.g. 022, 077; default 0).")
    var umask: String?

    @Option(
        help:
            "Kernel mount flags, comma-separated: nosuid, nodev, noexec, noatime, nodiratime, relatime, strictatime, lazytime, sync, dirsync (and suid, dev, exec, atime, async)."
    )
    var mountFlags: String?

    /// The flags libfuse passes to mount(2).
    static let knownMountFlags: Set<String> = [
        "nosuid", "nodev", "noexec", "noatime", "nodiratime", "relatime", "strictatime", "lazytime", "sync", "dirsync",
        "suid", "dev", "exec", "atime", "async",
    ]

    /// The options as checked; throws a message for a bad umask or an allow_other that
    /// fusermount3 would refuse.
    func resolved() throws -> MountAccess {
        var mask: UInt16 = 0
        if let umask {
            guard let value = UInt16(umask, radix: 8), value <= 0o777 else {
                throw CommandFailure("--umask must be octal mode bits from 000 to 777 (e.g. 022), not '\(umask)'")
            }
            mask = value
        }
        if allowOther, getuid() != 0, !Self.fuseConfigurationAllowsOther() {
            throw CommandFailure(
                "--allow-other (allow_other) is only allowed to root unless /etc/fuse.conf has the line user_allow_other; add it as root, or mount as root"
            )
        }
        let flags = (mountFlags ?? "").split(separator: ",").map(String.init)
        if let unknown = flags.first(where: { !Self.knownMountFlags.contains($0) }) {
            throw CommandFailure(
                "--mount-flags: '\(unknown)' is not a mount flag fpfs passes on (known: \(Self.knownMountFlags.sorted().joined(separator: ", ")))"
            )
        }
        return MountAccess(
            allowOther: allowOther, defaultPermissions: defaultPermissions, uid: uid ?? getuid(), gid: gid ?? getgid(),
            umask: mask, mountFlags: flags)
    }

    /// These options again, for the daemon's command line.
    var arguments: [String] {
        var arguments: [String] = []
        if allowOther { arguments.append("--allow-other") }
        if defaultPermissions { arguments.append("--default-permissions") }
        if let uid { arguments += ["--uid", String(uid)] }
        if let gid { arguments += ["--gid", String(gid)] }
        if let umask { arguments += ["--umask", umask] }
        if let mountFlags { arguments += ["--mount-flags", mountFlags] }
        return arguments
    }

    /// fusermount3 lets a user other than root pass allow_other only with `user_allow_other` on a
    /// line of its own in /etc/fuse.conf.
    private static func fuseConfigurationAllowsOther() -> Bool {
        guard let text = try? String(contentsOfFile: "/etc/fuse.conf", encoding: .utf8) else { return false }
        return text.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == "user_allow_other" }
    }
}

/// `MountAccessOptions` as the daemon applies them.
struct MountAccess: Sendable, Codable {
    var allowOther: Bool
    var defaultPermissions: Bool
    var uid: UInt32
    var gid: UInt32
    var umask: UInt16
    var mountFlags: [String]

    /// The libfuse `-o` options beside fsname and subtype.
    var fuseOptions: [String] { (defaultPermissions ? ["default_permissions"] : []) + mountFlags }
}
