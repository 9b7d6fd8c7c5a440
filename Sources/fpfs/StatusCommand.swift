import ArgumentParser
import Foundation

/// `fpfs status MOUNTPOINT [--json]`: what the mount's daemon is doing.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show what a mount's daemon is doing.")

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Flag(help: "Print JSON for scripts.")
    var json = false

    func run() async throws {
        do {
            let path = URL(fileURLWithPath: mountpoint).standardizedFileURL.path
            let answer = try ControlClient.send("status", to: path)
            if json {
                print(String(decoding: answer, as: UTF8.self))
            } else {
                let report = try JSONDecoder().decode(StatusReport.self, from: answer)
                print(report.text)
            }
        } catch let failure as CommandFailure {
            throw CommandFailure.exit(failure.message)
        }
    }
}
