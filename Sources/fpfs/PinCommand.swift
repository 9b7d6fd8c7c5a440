import ArgumentParser
import CFuse
import Foundation
import VFS

#if canImport(Glibc)
    import Glibc
#endif

/// `fpfs pin PATH…`: pins files and folders (recursively; new children inherit the pin) and waits
/// until all of it is local, showing a progress bar on a terminal and plain lines otherwise.
struct PinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin", abstract: "Download files and folders (recursively) and keep them local.",
        discussion: """
            The daemon downloads in the background; this command shows the progress and returns once \
            everything is local. It fails, naming the file, when a download fails (the remote is \
            unreachable, for instance) or nothing arrives for --timeout seconds. The pin stays either \
            way: the daemon keeps what it has and tries again at the next mount.
            """)

    @Argument(help: "Files or folders in an fpfs mount.")
    var paths: [String]

    @Flag(help: "Unpin instead (as fpfs unpin): the pin's downloads stop, what landed stays cached.")
    var cancel = false

    @Option(
        parsing: .unconditional, help: "How long without progress before giving up (1s to 1 day; e.g. 120, 90s, 5m).")
    var timeout = "120"

    func run() async throws {
        do {
            let timeout = try CommandFailure.checkDuration(self.timeout, of: "--timeout", in: 1...86400)
            let targets = try paths.map(MountedPath.init)
            if cancel {
                _ = try MountedPath.send("unpin", for: targets)
                return
            }
            _ = try MountedPath.send("pin", for: targets)
            try await wait(for: targets, timeout: timeout)
        } catch let failure as CommandFailure {
            throw CommandFailure.exit(failure.message)
        }
    }

    private func wait(for targets: [MountedPath], timeout: Duration) async throws {
        let width = TerminalLine.width()
        let isTerminal = width != nil
        let interrupt = Self.sayOnInterrupt(redrawing: isTerminal)
        defer { interrupt.cancel() }
        let start = ContinuousClock.now
        var lastProgress = (bytes: UInt64(0), time: start)
        var firstBytes: UInt64?
        var lastLine = start - .seconds(60)
        while true {
            var total = PinProgress()
            var failures: [String] = []
            for (group, answer) in try MountedPath.send("pin-status", for: targets) {
                for (target, progress) in zip(group, try JSONDecoder().decode([PinProgress].self, from: answer)) {
                    total.files += progress.files
                    total.localFiles += progress.localFiles
                    total.bytes += progress.bytes
                    total.localBytes += progress.localBytes
                    total.downloading = total.downloading || progress.downloading
                    if !progress.downloading, let error = progress.error { failures.append("\(target.path): \(error)") }
                }
            }
            let now = ContinuousClock.now
            let startBytes = firstBytes ?? total.localBytes
            firstBytes = startBytes
            let seconds = Double((now - start).components.seconds) + Double((now - start).components.attoseconds) / 1e18
            let rate = seconds > 0 ? Double(total.localBytes - min(total.localBytes, startBytes)) / seconds : 0
            let line = Self.describe(total, rate: rate, width: width.map { max($0, TerminalLine.narrowest) } ?? 200)
            let done = !total.downloading
            if isTerminal {
                print("\r\u{1B}[K" + line, terminator: done ? "\n" : "")
                fflush(nil)
            } else if done || now - lastLine >= .seconds(2) {
                print(line)
                lastLine = now
            }
            if done {
                if !failures.isEmpty { throw CommandFailure("cannot pin " + failures.joined(separator: "; ")) }
                guard total.localFiles == total.files else {
                    if !targets.contains(where: Self.isPinned) {
                        throw CommandFailure(
                            "unpinned (fpfs unpin or pin --cancel) with \(total.localFiles) of \(total.files) files local"
                        )
                    }
                    throw CommandFailure(
                        "\(total.files - total.localFiles) pinned files are not local; see fpfs status")
                }
                return
            }
            if total.localBytes > lastProgress.bytes {
                lastProgress = (total.localBytes, now)
            } else if now - lastProgress.time > timeout {
                throw CommandFailure(
                    "pinning made no progress for \(Units.text(timeout)) (\(total.localFiles) of \(total.files) files local); "
                        + "the daemon keeps trying, see fpfs status")
            }
            try await Task.sleep(for: .milliseconds(isTerminal ? 200 : 250))
        }
    }

    /// Whether `target` is still pinned (its `user.fpfs.pinned` is 1): an unpin elsewhere ends the wait.
    private static func isPinned(_ target: MountedPath) -> Bool {
        var value = [UInt8](repeating: 0, count: 1)
        return getxattr(target.path, "user.fpfs.pinned", &value, 1) == 1 && value[0] == UInt8(ascii: "1")
    }

    /// The progress line, within `width` columns: the bar narrows, then the words shorten.
    private static func describe(_ progress: PinProgress, rate: Double, width: Int) -> String {
        // Before the listing of a pinned folder arrives there is nothing to count yet: 0%, not 100%.
        let fraction =
            progress.bytes == 0
            ? (progress.downloading ? 0 : 1) : Double(progress.localBytes) / Double(progress.bytes)
        let (local, all, speed) = (
            StatusReport.bytes(progress.localBytes), StatusReport.bytes(progress.bytes),
            StatusReport.bytes(UInt64(rate)) + "/s"
        )
        return TerminalLine.bar(
            fraction,
            then: [
                "\(local) of \(all) local, \(progress.localFiles) of \(progress.files) files, \(speed)",
                "\(local)/\(all), \(progress.localFiles)/\(progress.files) files, \(speed)",
            ], width: width)
    }

    /// On Ctrl-C, says what goes on: the pin is the daemon's, not this command's. Ignoring
    /// SIGINT lets a dispatch source see it and exit with the shell's usual 130.
    private static func sayOnInterrupt(redrawing: Bool) -> any DispatchSourceSignal {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT)
        source.setEventHandler {
            if redrawing { print("") }
            fflush(nil)
            var standardError = StandardError()
            print(
                "fpfs: the pin stays and the daemon goes on downloading in the background (see fpfs status); 'fpfs pin --cancel PATH' unpins it and stops its downloads",
                to: &standardError)
            Foundation.exit(130)
        }
        source.resume()
        return source
    }
}

/// `fpfs unpin PATH…`: the files stay until eviction needs their room.
struct UnpinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpin",
        abstract:
            "Let eviction free files and folders (recursively) again, and download no more of them than is under way."
    )

    @Argument(help: "Files or folders in an fpfs mount.")
    var paths: [String]

    func run() async throws {
        do {
            _ = try MountedPath.send("unpin", for: try paths.map(MountedPath.init))
        } catch let failure as CommandFailure {
            throw CommandFailure.exit(failure.message)
        }
    }
}
