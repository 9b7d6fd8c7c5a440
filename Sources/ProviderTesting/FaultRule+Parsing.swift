import FileProviderKit

/// The text form of fault rules, for `fpfs mount --inject-faults SPEC`:
/// `SPEC = RULE(;RULE)*`, `RULE = EFFECT:OPERATION[:FILENAME]`, where EFFECT is `hang`,
/// `error=NAME` (a `ProviderError` case name), `delay=MILLISECONDS`, `short=BYTES`, `corrupt` or
/// `hang-after` (the change is made, its answer never comes) or `error-after=NAME` (the change is
/// made, the call throws the error).
/// Example: `hang:fetch:big.bin;error=serverUnreachable:fetch:bad.txt`.
extension FaultRule {
    /// Parses a whole spec; throws on the first rule that is not valid.
    public static func parse(_ spec: String) throws(FaultSpecError) -> [FaultRule] {
        var rules: [FaultRule] = []
        for rule in spec.split(separator: ";", omittingEmptySubsequences: false) {
            rules.append(try FaultRule(parsing: String(rule)))
        }
        return rules
    }

    /// Parses one rule.
    public init(parsing text: String) throws(FaultSpecError) {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        func refuse(_ reason: String) -> FaultSpecError { FaultSpecError(rule: text, reason: reason) }
        guard parts.count >= 2, !parts[0].isEmpty else { throw refuse("it needs an effect and an operation") }
        guard let operation = Operation(rawValue: parts[1]) else { throw refuse("unknown operation \"\(parts[1])\"") }
        var target = Target.everything
        if parts.count == 3 {
            let name = Filename(parts[2])
            guard name.isValid else { throw refuse("\"\(parts[2])\" is not a valid filename") }
            target = .filename(name)
        }
        let (name, hasValue, value) = Self.split(parts[0])
        let effect: Effect
        switch (name, hasValue) {
        case ("hang", false): effect = .hang
        case ("corrupt", false): effect = .corruptRange
        case ("hang-after", false): effect = .hangAfterCall
        case ("error", true):
            guard let error = Self.providerErrors[value] else { throw refuse("unknown error \"\(value)\"") }
            effect = .error(error)
        case ("error-after", true):
            guard let error = Self.providerErrors[value] else { throw refuse("unknown error \"\(value)\"") }
            effect = .errorAfterCall(error)
        case ("delay", true):
            guard let milliseconds = Int64(value), milliseconds >= 0 else {
                throw refuse("delay needs a whole number of milliseconds, not \"\(value)\"")
            }
            effect = .delay(.milliseconds(milliseconds))
        case ("short", true):
            guard let bytes = UInt64(value) else {
                throw refuse("short needs a whole number of bytes, not \"\(value)\"")
            }
            effect = .shortContent(bytes: bytes)
        default: throw refuse("unknown effect \"\(parts[0])\"")
        }
        self.init(effect, on: operation, for: target)
    }

    /// "name=value" as its parts; `hasValue` tells "name" from "name=".
    private static func split(_ effect: String) -> (name: String, hasValue: Bool, value: String) {
        guard let equals = effect.firstIndex(of: "=") else { return (effect, false, "") }
        return (String(effect[..<equals]), true, String(effect[effect.index(after: equals)...]))
    }

    /// Every `ProviderError` by case name, with neutral payloads.
    private static let providerErrors: [String: ProviderError] = [
        "noSuchItem": .noSuchItem(nil), "serverUnreachable": .serverUnreachable(reason: "injected fault"),
        "notAuthenticated": .notAuthenticated(reason: "injected fault"), "insufficientQuota": .insufficientQuota,
        "cannotSynchronize": .cannotSynchronize(reason: "injected fault"),
        "filenameCollision": .filenameCollision(existing: nil),
        "directoryNotEmpty": .directoryNotEmpty, "deletionRejected": .deletionRejected,
        "excludedFromSync": .excludedFromSync,
        "featureUnsupported": .featureUnsupported, "versionNoLongerAvailable": .versionNoLongerAvailable,
        "pageExpired": .pageExpired, "syncAnchorExpired": .syncAnchorExpired, "conflict": .conflict(remote: nil),
    ]
}
