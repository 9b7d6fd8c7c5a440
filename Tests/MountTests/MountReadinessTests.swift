import Foundation
import Testing

extension MountTests {
    /// `fpfs mount` returns only once the mount answers, shows up as `fpfs:REMOTE` of type
    /// `fuse.fpfs`, and `fpfs unmount` returns only once the mount and its daemon are gone.
    @Suite("Mount and unmount return when done")
    struct MountReadinessTests {
        @Test("the very next ls after fpfs mount works; after fpfs unmount nothing is left", arguments: 1...3)
        func usableOnReturn(_ round: Int) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("a.txt", "alpha \(round)\n")
            try scratch.writeRemote("sub/b.txt", "beta\n")

            let mount = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { mount.unmount() }
            let listing = await Command(["ls", "-A", mount.mountpoint], timeout: .seconds(20)).run()
            #expect(listing.succeeded, "ls right after fpfs mount: \(listing)")
            #expect(listing.lines == ["a.txt", "sub"])
            let read = try await Command(["cat", "--", mount.path("a.txt")]).check()
            #expect(read.stdout == "alpha \(round)\n")

            let entries = MountTable.entries(at: mount.mountpoint)
            #expect(entries.count == 1)
            #expect(entries.first?.type == "fuse.fpfs")
            #expect(entries.first?.source == "fpfs:" + scratch.remote, "the mount source should be fpfs:REMOTE")

            let unmount = mount.unmount()
            #expect(unmount?.succeeded == true, "fpfs unmount: \(unmount.map(\.description) ?? "not run")")
            #expect(!MountTable.isMounted(mount.mountpoint), "still mounted after fpfs unmount returned")
            if let daemon = mount.daemon {
                #expect(!daemon.isAlive, "the daemon still runs after fpfs unmount returned")
            } else {
                Issue.record("no pid in \(mount.cacheDir)/daemon.pid")
            }
        }
    }
}
