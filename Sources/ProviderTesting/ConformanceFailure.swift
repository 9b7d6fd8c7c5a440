/// Why a provider failed a conformance check: the check, and what was wrong, in words a provider
/// author can act on.
public struct ConformanceFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public let check: ConformanceCheck
    public let message: String

    public init(check: ConformanceCheck, message: String) {
        self.check = check
        self.message = message
    }

    public var description: String { "\(check): \(message)" }
}
