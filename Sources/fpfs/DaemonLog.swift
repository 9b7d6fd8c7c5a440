import ArgumentParser
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where the daemon's log goes and how much of it is kept.
///
/// To stderr (the terminal, or journald under systemd) unless a file is given; the background
/// daemon always has one (`CACHE_DIR/fpfs.log`, or `--log-file`). A file is held under `cap`
/// bytes: once a line takes it past the cap it moves to `NAME.1` (replacing the one before) and a
/// new file starts. The file is made stdout and stderr too, so that what is not a log line (a
/// crash report of the Swift runtime) lands in the same place.
enum DaemonLog {
    /// The most a log file holds before it moves to `NAME.1`.
    static let cap: Int64 = 10 << 20

    /// Sends swift-log's output to `file` (or stderr) at `level`; throws a message when the file
    /// cannot be opened.
    static func start(file: String?, level: Logger.Level) throws {
        guard let file else {
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            return
        }
        let rotating = try RotatingFile(path: file, cap: cap)
        LoggingSystem.bootstrap { label in
            var handler = RotatingHandler(inner: StreamLogHandler.standardError(label: label), file: rotating)
            handler.logLevel = level
            return handler
        }
    }

    /// Opens `path` for appending, creating it; throws the message a user sees.
    static func openAppending(_ path: String) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CommandFailure("cannot open the log file '\(path)': \(String(cString: strerror(errno)))")
        }
        return fd
    }

    /// The level from `--log-level`, raised by each `-v` (one: debug, two: trace).
    static func level(named name: Logger.Level?, verbosity: Int) -> Logger.Level {
        switch verbosity {
        case 0: name ?? .info
        case 1: .debug
        default: .trace
        }
    }
}

/// The log file, moved aside when it grows past its cap. The file is fds 1 and 2 of the
/// process: swift-log's stderr stream writes to it without knowing.
final class RotatingFile: Sendable {
    let path: String
    let cap: Int64
    private let lock = Mutex(())

    init(path: String, cap: Int64) throws {
        self.path = path
        self.cap = cap
        try lock.withLock { _ in try Self.open(path) }
        // A log left full by the last daemon moves aside before this one's first line.
        rotateIfFull()
    }

    /// Moves the file to `PATH.1` and starts a new one once it is past the cap.
    func rotateIfFull() {
        lock.withLock { _ in
            var status = stat()
            guard fstat(STDERR_FILENO, &status) == 0, Int64(status.st_size) > cap else { return }
            fflush(nil)
            _ = rename(path, path + ".1")
            try? Self.open(path)
        }
    }

    private static func open(_ path: String) throws {
        let fd = try DaemonLog.openAppending(path)
        dup2(fd, STDOUT_FILENO)
        dup2(fd, STDERR_FILENO)
        close(fd)
    }
}

/// swift-log's stream handler, followed by a look at the file's size.
struct RotatingHandler: LogHandler {
    var inner: StreamLogHandler
    let file: RotatingFile

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }
    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        inner.log(event: event)
        file.rotateIfFull()
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
