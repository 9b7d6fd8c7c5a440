import ArgumentParser
import Foundation

/// `fpfs sync MOUNTPOINT [--timeout S]`: waits until every local change is on the remote.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Wait until every local change of a mount has reached the remote.",
        discussion:
            "Exits non-zero if changes are still waiting when the timeout ends, or at once when all that waits was refused by the remote after this sync retried it."
    )

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Option(parsing: .unconditional, help: "How long to wait at most (1s to 1 day; e.g. 600, 90s, 10m).")
    var timeout = "600"

    func run() async throws {
        do {
            let timeout = try CommandFailure.checkDuration(self.timeout, of: "--timeout", in: 1...86400)
            let path = CommandLinePath.absolute(mountpoint)
            let deadline = ContinuousClock.now + timeout
            // The first request retries waiting changes at once instead of after their backoff.
            var command = "sync"
            while true {
                let answer = try ControlClient.send(command, to: path)
                let uploads = try JSONDecoder().decode(StatusReport.self, from: answer).uploads
                if uploads.pending == 0 { return }
                // Everything left was refused since this sync asked for a retry: nothing will
                // change before the next retry, ten minutes away.
                if let refused = uploads.refused, refused >= uploads.pending {
                    throw CommandFailure(
                        "the remote refused \(refused) changes; they are tried again in ten minutes or at the next fpfs sync (see fpfs status and the log)"
                    )
                }
                if ContinuousClock.now >= deadline {
                    throw CommandFailure(
                        "\(uploads.pending) changes have not reached the remote after \(Units.text(timeout))"
                            + (uploads.failing > 0 ? " (\(uploads.failing) failing; see fpfs status and the log)" : ""))
                }
                command = "status"
                try await Task.sleep(for: .milliseconds(100))
            }
        } catch let failure as CommandFailure {
            throw CommandFailure.exit(failure.message)
        }
    }
}
