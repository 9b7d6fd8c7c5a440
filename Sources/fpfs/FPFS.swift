import ArgumentParser

/// fpfs: a remote as an ordinary directory, its contents fetched only when read.
@main
struct FPFS: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fpfs",
        abstract: "Show a remote as a directory; fetch file contents only when something reads them.",
        subcommands: [
            MountCommand.self, UnmountCommand.self, StatusCommand.self, SyncCommand.self, SignalCommand.self,
            PinCommand.self, UnpinCommand.self, EvictCommand.self,
        ]
    )
}
