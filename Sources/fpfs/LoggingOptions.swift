import ArgumentParser
import Logging

/// `-v`, `--log-level` and `--log-file` of `fpfs mount`.
struct LoggingOptions: ParsableArguments {
    @Flag(name: [.customShort("v"), .customLong("verbose")], help: "Log more: -v debug, -vv trace.")
    var verbosity: Int

    @Option(help: "The daemon's log level (default info).")
    var logLevel: Logger.Level?

    @Option(
        help:
            "Write the daemon's log to this file (default: fpfs.log in the cache folder; with --foreground, stderr). Kept under 10 MiB; a full one moves to FILE.1."
    )
    var logFile: String?

    var level: Logger.Level { DaemonLog.level(named: logLevel, verbosity: verbosity) }

    /// These options again, for the daemon's command line (without the file, which the launcher
    /// decides).
    var levelArguments: [String] { ["--log-level", level.rawValue] }
}
