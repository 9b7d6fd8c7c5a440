import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `fpfs status [MOUNTPOINT] [--json] [--watch]`: what a mount's daemon is doing.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show what a mount's daemon is doing (every fpfs mount without MOUNTPOINT).")

    @Argument(help: "The mountpoint (default: every fpfs mount).")
    var mountpoint: String?

    @Flag(help: "Print JSON for scripts.")
    var json = false

    @Flag(help: "Show the report again every second, with rates, until interrupted.")
    var watch = false

    func run() async throws {
        do {
            let mountpoints = try self.mountpoints()
            var previous: [String: StatusReport] = [:]
            while true {
                var pages: [String] = []
                for path in mountpoints {
                    do {
                        let answer = try ControlClient.send("status", to: path)
                        if json {
                            pages.append(String(decoding: answer, as: UTF8.self))
                            continue
                        }
                        let report = try JSONDecoder().decode(StatusReport.self, from: answer)
                        // Redrawn in place, a report must fit the terminal: a wrapped line scrolls it.
                        let width = watch ? TerminalLine.width().map { max($0, TerminalLine.narrowest) } : nil
                        pages.append(report.text(since: previous[path], width: width))
                        previous[path] = report
                    } catch  where mountpoint == nil {
                        // One mount that cannot answer (its daemon hung, or of another version)
                        // does not hide the others.
                        let reason = (error as? CommandFailure)?.message ?? "\(error)"
                        FileHandle.standardError.write(Data("fpfs: no status from \(path): \(reason)\n".utf8))
                    }
                }
                // On a terminal each report replaces the last; elsewhere they follow each other.
                if watch, !json, isatty(STDOUT_FILENO) != 0 { print("\u{1B}[H\u{1B}[2J", terminator: "") }
                print(pages.joined(separator: json ? "\n" : "\n\n"))
                guard watch else { return }
                if !json, isatty(STDOUT_FILENO) == 0 { print("") }
                fflush(nil)
                try await Task.sleep(for: .seconds(1))
            }
        } catch let failure as CommandFailure {
            throw CommandFailure.exit(failure.message)
        }
    }

    /// The mountpoint given, or every fpfs mount in /proc/mounts.
    private func mountpoints() throws -> [String] {
        if let mountpoint { return [CommandLinePath.absolute(mountpoint)] }
        let mounts = MountTable.mounts().filter { $0.type == "fuse.fpfs" }.map(\.mountpoint)
        guard !mounts.isEmpty else { throw CommandFailure("no fpfs mount is mounted") }
        return mounts
    }
}
