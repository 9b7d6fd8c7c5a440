/// What the operation checker found: the seed to replay it, the steps taken (with each result of
/// the mount) and what did not hold.
struct CheckerFailure: Error, CustomStringConvertible {
    let seed: UInt64
    let kind: WritableRemote.Kind
    let steps: [String]
    let problems: [String]
    let logTail: String
    /// What the sequence did up to the failure.
    let summary: OperationChecker.Summary

    var description: String {
        """
        the operation checker failed on a \(kind) remote; replay with \
        FPFS_CHECK_SEED=\(seed) FPFS_CHECK_OPS=\(steps.filter { !$0.hasPrefix(" ") }.count) FPFS_CHECK_REMOTE=\(kind)
        what does not hold:
        \(problems.map { "  - " + $0 }.joined(separator: "\n"))
        the steps:
        \(steps.map { "  " + $0 }.joined(separator: "\n"))
        the daemon's log, last lines:
        \(logTail)
        """
    }
}
