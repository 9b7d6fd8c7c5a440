import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension MountTests {
    /// `mount -t fpfs`, fstab lines and `umount` through the `mount.fpfs` helper, and
    /// `allow_other` with a second user.
    @Suite("The mount(8) helper")
    struct MountHelperTests {
        @Test("mount -t fpfs and -t fuse.fpfs with -o options, umount ends the daemon")
        func mountDashT() async throws {
            let links = try HelperLinks()
            defer { links.remove() }
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("a.txt", "alpha\n")
            let options =
                "cache_dir=\(scratch.cache),poll_interval=1m,cache_size=10G,ro,noatime,nosuid,_netdev,nofail,x-systemd.automount,defaults"
            try await Command(["mount", "-t", "fpfs", scratch.remote, scratch.mountpoint, "-o", options]).check()
            let mount = TestMount(remote: scratch.remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache)
            defer { mount.unmount() }
            #expect(MountTable.entries(at: scratch.mountpoint).first?.type == "fuse.fpfs")
            let status = try await NativeStatus.of(scratch.mountpoint)
            #expect(status.settings.readOnly && status.settings.pollInterval == 60)
            #expect(status.cache.bound == 10 << 30)
            #expect(Set(status.settings.access.mountFlags) == ["noatime", "nosuid"])
            let mounts = try String(contentsOfFile: "/proc/mounts", encoding: .utf8)
            let line = mounts.split(separator: "\n").first { $0.contains(" \(scratch.mountpoint) ") }
            #expect(line?.contains("nosuid") == true && line?.contains("noatime") == true, "\(line ?? "")")
            #expect(try String(contentsOfFile: mount.path("a.txt"), encoding: .utf8) == "alpha\n")
            let write = await Command(["touch", mount.path("new.txt")]).run()
            #expect(!write.succeeded && write.stderr.contains("Read-only file system"), "\(write)")

            let daemon = try #require(mount.daemon)
            try await Command(["umount", scratch.mountpoint]).check()
            #expect(!MountTable.isMounted(scratch.mountpoint))
            #expect(await daemon.waitForExit(timeout: .seconds(30)), "the daemon outlived umount")

            // A value holding commas is quoted, as mount(8) allows.
            try await Command([
                "mount", "-t", "fuse.fpfs", scratch.remote, scratch.mountpoint, "-o",
                #"cache_dir=\#(scratch.cache),mount_flags="nodev,noexec""#,
            ]).check()
            #expect(MountTable.entries(at: scratch.mountpoint).first?.type == "fuse.fpfs")
            #expect(try await NativeStatus.of(scratch.mountpoint).settings.access.mountFlags == ["nodev", "noexec"])
            try await Command(["umount", scratch.mountpoint]).check()
            #expect(!MountTable.isMounted(scratch.mountpoint))

            let bad = await Command([
                "mount", "-t", "fpfs", scratch.remote, scratch.mountpoint, "-o",
                "cache_dir=\(scratch.cache),no_such_option",
            ]).run()
            #expect(!bad.succeeded && bad.stderr.contains("no-such-option"), "\(bad)")
            #expect(!MountTable.isMounted(scratch.mountpoint))
        }

        @Test("an fstab line (mount -T) with uid, gid, umask and default_permissions; umount")
        func fstabLine() async throws {
            let links = try HelperLinks()
            defer { links.remove() }
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("a.txt", "alpha\n")
            let fstab = scratch.path + "/fstab"
            try Data(
                """
                # a scratch fstab
                \(scratch.remote) \(scratch.mountpoint) fpfs cache_dir=\(scratch.cache),uid=4321,gid=4322,umask=027,default_permissions,poll_interval=500ms,cache_size=100MB,noauto,_netdev 0 0

                """.utf8
            ).write(to: URL(fileURLWithPath: fstab))
            try await Command(["mount", "-T", fstab, scratch.mountpoint]).check()
            let mount = TestMount(remote: scratch.remote, mountpoint: scratch.mountpoint, cacheDir: scratch.cache)
            defer { mount.unmount() }
            let status = try await NativeStatus.of(scratch.mountpoint)
            #expect(status.settings.access.uid == 4321 && status.settings.access.gid == 4322)
            #expect(status.settings.access.umask == 0o027 && status.settings.access.defaultPermissions)
            #expect(status.settings.pollInterval == 0.5 && status.cache.bound == 100_000_000)
            var info = stat()
            #expect(stat(mount.path("a.txt"), &info) == 0)
            #expect(info.st_uid == 4321 && info.st_gid == 4322)
            #expect(info.st_mode & 0o7777 == 0o640, "mode \(String(info.st_mode & 0o7777, radix: 8))")
            try await Command(["umount", scratch.mountpoint]).check()
            #expect(!MountTable.isMounted(scratch.mountpoint))
        }

        @Test("another user reads an allow_other mount of root's, and gets EACCES without it or without the mode")
        func allowOther() async throws {
            let user = try TestUser()
            defer { user.remove() }
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("open.txt", "for all\n")
            try scratch.writeRemote("secret.txt", "root's\n")
            chmod(scratch.remote + "/secret.txt", 0o600)
            try TestUser.letEveryoneThrough(scratch.mountpoint)

            let shared = try await TestMount.start(
                remote: scratch.remote, in: scratch, options: ["--allow-other", "--default-permissions"])
            defer { shared.unmount() }
            let read = try await user.run(["cat", shared.path("open.txt")]).check()
            #expect(read.stdout == "for all\n")
            let secret = await user.run(["cat", shared.path("secret.txt")]).run()
            #expect(!secret.succeeded && secret.stderr.contains("Permission denied"), "\(secret)")
            shared.unmount()

            let own = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { own.unmount() }
            let refused = await user.run(["cat", own.path("open.txt")]).run()
            #expect(!refused.succeeded && refused.stderr.contains("Permission denied"), "\(refused)")
            own.unmount()

            // A user's own allow_other mount needs user_allow_other in /etc/fuse.conf: the message says so.
            if !FusermountCheck.configurationAllowsOther() {
                let theirs = await user.run([
                    try FpfsBinary.path(), "mount", "/tmp", scratch.path + "/theirs", "--allow-other",
                ]).run()
                #expect(!theirs.succeeded && theirs.stderr.contains("user_allow_other"), "\(theirs)")
            }
        }
    }
}

/// `/sbin/mount.fpfs` and `/sbin/mount.fuse.fpfs` pointing at the binary under test, for one
/// test: mount(8) looks for helpers in /sbin only. A helper already there (an installed fpfs) is
/// put back afterwards.
struct HelperLinks {
    static let paths = ["/sbin/mount.fpfs", "/sbin/mount.fuse.fpfs"]
    private let saved: [String: String]

    init() throws {
        let binary = try FpfsBinary.path()
        var saved: [String: String] = [:]
        for path in Self.paths {
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path) {
                saved[path] = target
                try FileManager.default.removeItem(atPath: path)
            } else if FileManager.default.fileExists(atPath: path) {
                throw MountTestFailure("\(path) exists and is not a symlink; not replacing it")
            }
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: binary)
        }
        self.saved = saved
    }

    func remove() {
        for path in Self.paths {
            try? FileManager.default.removeItem(atPath: path)
            if let target = saved[path] {
                try? FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
            }
        }
    }
}

/// A user made for one test with useradd, and removed by `remove()`.
struct TestUser {
    let name: String

    init() throws {
        name = "fpfs-t\(getpid() % 100_000)"
        _ = Command(["userdel", name]).runBlocking()
        let made = Command(["useradd", "--no-create-home", "--shell", "/bin/sh", name]).runBlocking()
        guard made.succeeded else { throw MountTestFailure("cannot add a user: \(made)") }
    }

    /// The user's id.
    var uid: uid_t { getpwnam(name)?.pointee.pw_uid ?? uid_t.max }

    /// `arguments` run as this user, after `prefix` (a namespace's `nsenter`).
    func run(_ arguments: [String], prefix: [String] = []) -> Command {
        Command(prefix + ["runuser", "-u", name, "--"] + arguments, timeout: .seconds(30))
    }

    func remove() {
        _ = Command(["userdel", name]).runBlocking()
    }

    /// Gives every folder above `path` search permission for others (the test's folders are 0700).
    static func letEveryoneThrough(_ path: String) throws {
        var folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        while folder.path != "/" {
            var info = stat()
            guard stat(folder.path, &info) == 0 else { throw MountTestFailure("cannot stat \(folder.path)") }
            if info.st_mode & 0o001 == 0 { chmod(folder.path, (info.st_mode & 0o7777) | 0o001) }
            folder.deleteLastPathComponent()
        }
    }
}
