import Foundation
import Testing

extension MountTests {
    /// Memory does not grow with the number of changes sent (DECISIONS 204).
    @Suite("Memory per upload")
    struct UploadMemoryTests {
        /// The daemon's resident set, in bytes.
        static func residentBytes(of daemon: DaemonProcess) throws -> Int {
            let status = try String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8)
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
                let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
            else { throw MountTestFailure("no VmRSS in /proc/\(daemon.pid)/status") }
            return kilobytes * 1024
        }

        @Test("the daemon's memory after 1 200 small uploads is within a few MiB of that after 200")
        func memoryFlatAcrossUploads() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let mount = try await TestMount.start(remote: scratch.remote, in: scratch)
            defer { mount.unmount() }
            let daemon = try #require(mount.daemon, "no pid in \(mount.cacheDir)/daemon.pid")
            // The same 50 files each round: every round sends 50 changes, and nothing new is kept.
            var early = 0
            for round in 1...24 {
                try await Command.bash(
                    "for i in $(seq 1 50); do echo \"$2 $i\" > \"$1/f$i.txt\"; done", mount.mountpoint, String(round)
                ).check()
                try await mount.sync()
                if round == 4 { early = try Self.residentBytes(of: daemon) }
            }
            let late = try Self.residentBytes(of: daemon)
            // Before, each send kept 10–27 KB: 1 000 sends more held 10 MiB and more.
            #expect(late - early < 4 << 20, "RSS grew from \(early) to \(late) bytes over 1 000 uploads")
            #expect(try String(contentsOfFile: scratch.remote + "/f7.txt", encoding: .utf8) == "24 7\n")
        }
    }
}
