import ArgumentParser

/// fpfs: a remote as an ordinary directory, its contents fetched only when read.
struct FPFS: AsyncParsableCommand {
    /// The release; `--version` adds the git commit the binary was built from (`BuildCommit`).
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "fpfs",
        abstract: "Show a remote as a directory; fetch file contents only when something reads them.",
        discussion: """
            'fpfs mount' returns once the mount is usable and leaves a daemon running that serves \
            it until 'fpfs unmount' (or umount, fusermount3 -u). The daemon logs to fpfs.log in the \
            mount's cache folder (by default $XDG_CACHE_HOME/fpfs/NAME-DIGEST/fpfs.log, else \
            ~/.cache/fpfs/NAME-DIGEST/fpfs.log; 'fpfs status' names the folder), or to --log-file \
            FILE; with --foreground and no --log-file, to stderr. A log file is kept under 10 MiB: \
            a full one moves to FILE.1 (fpfs.log.1), replacing the one before.

            Extended attributes of every item, read without downloading (getfattr -d -m user.fpfs): \
            user.fpfs.state (cloud, partial or local; dirty, uploading, error or conflict for a \
            change here), user.fpfs.local_bytes (bytes on this machine), user.fpfs.id (the \
            remote's identifier), user.fpfs.pinned (1 or 0; setting it pins or unpins), \
            user.fpfs.info.KEY (the remote's extra facts) and, on the root, user.fpfs.control (the \
            daemon's control socket).

            Shell completion: 'fpfs --generate-completion-script bash' (or zsh, fish) prints the \
            script; scripts/install.sh installs those of bash and zsh.
            """,
        subcommands: [
            MountCommand.self, UnmountCommand.self, StatusCommand.self, SyncCommand.self, SignalCommand.self,
            PinCommand.self, UnpinCommand.self, EvictCommand.self,
        ]
    )

    @Flag(name: [.customShort("V"), .customLong("version")], help: "Print the version and the git commit, then exit.")
    var showsVersion = false

    /// "fpfs 0.1.0 (commit 0123456789ab)".
    static var versionLine: String { "fpfs \(version) (commit \(BuildCommit.commit))" }

    func run() async throws {
        guard showsVersion else { throw CleanExit.helpRequest(self) }
        print(Self.versionLine)
    }
}
