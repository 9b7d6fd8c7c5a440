import Foundation
import VFS

/// What `fpfs unmount` does before it unmounts: waits, up to `--unmount-wait`, for the mount's
/// changes to reach the remote, with a progress line on stderr, and says what stays queued and
/// where (DECISIONS 201). The daemon keeps sending as long as it is mounted, so waiting happens
/// before the unmount, never after it.
struct UnmountWait {
    let mountpoint: String
    let bound: Duration

    /// The longest `--unmount-wait` accepted.
    static let longest: Duration = .seconds(86400)

    /// "60", "60s", "1500ms", "2m", "1h" (a bare number is seconds), from 0 to a day.
    static func parse(_ text: String) throws -> Duration {
        let message = "--unmount-wait must be a duration from 0 to 86400s (e.g. 0, 60, 90s, 1500ms, 2m), not '\(text)'"
        guard !text.hasPrefix("-"), let seconds = Units.seconds(text, bare: 1), seconds >= 0,
            seconds <= Double(longest.components.seconds)
        else { throw CommandFailure(message) }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// Waits until nothing is pending, everything pending was refused, or the bound ends; returns
    /// the last status, or nil when the daemon did not answer.
    func run() async -> StatusReport? {
        let start = ContinuousClock.now
        var command = "sync"  // the first request retries waiting changes at once
        var lastLine: ContinuousClock.Instant?
        while true {
            guard let answer = try? ControlClient.send(command, to: mountpoint),
                let report = try? JSONDecoder().decode(StatusReport.self, from: answer)
            else { return nil }
            command = "status"
            let queue = report.uploads
            let elapsed = ContinuousClock.now - start
            if queue.pending == 0 || elapsed >= bound || (queue.refused ?? 0) >= queue.pending { return report }
            if lastLine.map({ ContinuousClock.now - $0 >= .seconds(5) }) ?? true {
                lastLine = .now
                Self.say(
                    "waiting for \(Self.changes(queue)) to reach the remote before unmounting (\(Self.seconds(elapsed)) of \(Self.seconds(bound)) s; --unmount-wait)"
                )
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// What to tell the user when changes stay queued after the unmount.
    static func queuedMessage(_ report: StatusReport) -> String {
        let queue = report.uploads
        let refused = (queue.refused ?? 0) > 0 ? " (\(queue.refused ?? 0) refused by the remote; see the log)" : ""
        return
            "\(changes(queue)) did not reach the remote\(refused) and stay queued in the cache folder '\(report.cacheDirectory)': keep that folder; the next fpfs mount with it sends them"
    }

    static func say(_ line: String) {
        FileHandle.standardError.write(Data("fpfs: \(line)\n".utf8))
    }

    /// "1 change", "N changes (B bytes)".
    static func changes(_ queue: UploadQueue) -> String {
        let count = queue.pending == 1 ? "1 change" : "\(queue.pending) changes"
        return queue.bytes > 0 ? "\(count) (\(queue.bytes) bytes)" : count
    }

    private static func seconds(_ duration: Duration) -> Int { Int(duration.components.seconds) }
}
