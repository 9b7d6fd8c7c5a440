/// Why a fault spec (`fpfs mount --inject-faults SPEC`) was refused: the offending rule and what
/// is wrong with it, with the grammar, so the user can fix the command line.
public struct FaultSpecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The rule as written.
    public let rule: String
    public let reason: String

    public init(rule: String, reason: String) {
        self.rule = rule
        self.reason = reason
    }

    public var description: String {
        "invalid fault rule \"\(rule)\": \(reason) (expected EFFECT:OPERATION[:FILENAME] joined by ';', "
            + "EFFECT one of hang, error=NAME, delay=MILLISECONDS, short=BYTES, corrupt; "
            + "OPERATION one of \(FaultRule.Operation.allCases.map(\.rawValue).joined(separator: ", ")))"
    }
}
