/// How one conformance check ended. Skipping is not failing: the provider lacks an optional
/// capability (partial fetches, change enumeration, the write half) or the test gave the suite no
/// way to change the remote.
public enum ConformanceOutcome: Sendable, Hashable, CustomStringConvertible {
    case passed
    case skipped(reason: String)
    case failed(ConformanceFailure)

    public var description: String {
        switch self {
        case .passed: "passed"
        case .skipped(let reason): "skipped (\(reason))"
        case .failed(let failure): "FAILED: \(failure.message)"
        }
    }
}
