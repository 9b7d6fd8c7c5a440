import ArgumentParser
import Foundation

/// `fpfs signal MOUNTPOINT`: the Linux form of signalEnumerator(.workingSet). Asks the remote for
/// its changes now and returns once the mount shows them.
struct SignalCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signal",
        abstract: "Ask the remote of a mount for its changes now; return once the mount shows them.",
        discussion: "Exits non-zero with the reason if the remote could not be asked within the timeout.")

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Option(parsing: .unconditional, help: "How long to wait at most (1s to 1h; e.g. 60, 90s, 5m).")
    var timeout = "60"

    func run() async throws {
        do {
            // The daemon takes whole seconds; a fraction counts as a second more.
            let bound = try CommandFailure.checkDuration(self.timeout, of: "--timeout", in: 1...3600)
            let timeout = Int(bound.components.seconds) + (bound.components.attoseconds > 0 ? 1 : 0)
            let path = CommandLinePath.absolute(mountpoint)
            let answer = try ControlClient.send("signal \(timeout)", to: path, timeout: timeout + 5)
            guard let fields = try? JSONDecoder().decode([String: String].self, from: answer) else {
                throw CommandFailure("the daemon of \(path) gave no answer within \(timeout) s")
            }
            if let error = fields["error"] { throw CommandFailure("cannot take the remote's changes: \(error)") }
            print("\(fields["changes"] ?? "0") changes from the remote")
        } catch let failure as CommandFailure {
            throw CommandFailure.exit(failure.message)
        }
    }
}
