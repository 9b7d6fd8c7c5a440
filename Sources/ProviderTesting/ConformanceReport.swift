/// The outcome of every check of a `ProviderConformance.run()`, in order; its description lists
/// them one per line, ready for a test's failure message.
public struct ConformanceReport: Sendable, CustomStringConvertible {
    /// Each check with how it ended.
    public var outcomes: [(check: ConformanceCheck, outcome: ConformanceOutcome)]

    public init(outcomes: [(check: ConformanceCheck, outcome: ConformanceOutcome)] = []) {
        self.outcomes = outcomes
    }

    /// The checks that failed.
    public var failures: [ConformanceFailure] {
        outcomes.compactMap { if case .failed(let failure) = $0.outcome { failure } else { nil } }
    }

    /// The checks that were skipped.
    public var skipped: [ConformanceCheck] {
        outcomes.compactMap { if case .skipped = $0.outcome { $0.check } else { nil } }
    }

    /// True when no check failed.
    public var passed: Bool { failures.isEmpty }

    public var description: String { outcomes.map { "\($0.check): \($0.outcome)" }.joined(separator: "\n") }
}
