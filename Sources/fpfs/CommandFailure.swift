import ArgumentParser
import Foundation

/// A failure the user can act on: printed as one line on stderr, exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

extension CommandFailure {
    /// Prints the message and exits non-zero, the way every command ends on a user-facing error.
    static func exit(_ message: String) -> ExitCode {
        var standardError = StandardError()
        print("fpfs: \(message)", to: &standardError)
        return ExitCode.failure
    }
}

extension CommandFailure {
    /// Fails unless `value`, given with `option`, is a whole number of seconds in `range`.
    static func checkSeconds(_ value: Int, of option: String, in range: ClosedRange<Int>) throws {
        try check(value, of: option, in: range, "a whole number of seconds")
    }

    /// The duration `text` given with `option`, in `range` (seconds): a bare whole number is
    /// seconds and keeps `checkSeconds`'s message; `500ms`, `30s`, `1m`, `2h` are accepted too.
    static func checkDuration(_ text: String, of option: String, in range: ClosedRange<Int>) throws -> Duration {
        if let value = Int(text) {
            try checkSeconds(value, of: option, in: range)
            return .seconds(value)
        }
        let what = "a duration from \(range.lowerBound)s to \(range.upperBound)s (e.g. 30, 500ms, 30s, 1m, 2h)"
        guard !text.hasPrefix("-") else {
            throw CommandFailure(
                "\(option) must be \(range.lowerBound > 0 ? "positive" : "zero or positive"): \(what), not '\(text)'")
        }
        guard let seconds = Units.seconds(text, bare: 1), seconds >= Double(range.lowerBound),
            seconds <= Double(range.upperBound)
        else { throw CommandFailure("\(option) must be \(what), not '\(text)'") }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// Fails unless `value`, given with `option`, is in `range`, with a message naming both (and
    /// saying "positive" for a negative value). Numeric options are parsed `.unconditional`ly, so
    /// `-5` reaches here instead of being read as an option with a value missing.
    static func check(_ value: Int, of option: String, in range: ClosedRange<Int>, _ what: String) throws {
        guard !range.contains(value) else { return }
        let sign =
            value < 0 && range.lowerBound >= 0 ? (range.lowerBound > 0 ? "positive, " : "zero or positive, ") : ""
        throw CommandFailure(
            "\(option) must be \(sign)\(what) from \(range.lowerBound) to \(range.upperBound), not \(value)")
    }
}

/// stderr as a TextOutputStream.
struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileHandleWriter.writeToStandardError(string)
    }
}

private enum FileHandleWriter {
    static func writeToStandardError(_ string: String) {
        FileHandle.standardError.write(Data(string.utf8))
    }
}
