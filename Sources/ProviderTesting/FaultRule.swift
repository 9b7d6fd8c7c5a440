import FileProviderKit

/// One fault to inject: what goes wrong, in which provider calls, for which items. Tests add
/// rules to a `FaultInjector` (and remove them to let the remote recover); `fpfs mount
/// --inject-faults` builds them from text with `FaultRule.parse(_:)`.
public struct FaultRule: Sendable, Hashable, CustomStringConvertible {
    /// What happens to a matching call. Several matching rules apply in the order they were added.
    public enum Effect: Sendable, Hashable {
        /// The call never answers until its task is cancelled (it then throws `CancellationError`)
        /// or the rule is removed (it then goes ahead): a server that stopped responding.
        case hang
        /// The call throws this error without reaching the inner provider.
        case error(ProviderError)
        /// The call waits this long, then goes ahead.
        case delay(Duration)
        /// A fetch delivers only its first `bytes` bytes into the sink, then returns normally.
        case shortContent(bytes: UInt64)
        /// A partial fetch reports a retrieved range one byte off from what it wrote.
        case corruptRange
        /// The call goes ahead and the inner provider makes the change, then the answer never
        /// comes, as with `hang`: a remote that applied a write whose answer was lost (a daemon
        /// killed just after an upload's bytes left).
        case hangAfterCall
        /// The call goes ahead and the inner provider makes the change, then the call throws this
        /// error: a remote that applied a write whose answer was lost on the way (a reset
        /// connection, an outage).
        case errorAfterCall(ProviderError)

        /// Whether the effect comes once the inner provider has answered.
        var isAfterCall: Bool {
            switch self {
            case .hangAfterCall, .errorAfterCall: true
            default: false
            }
        }
    }

    /// Which provider calls a rule applies to.
    public enum Operation: String, Sendable, Hashable, CaseIterable {
        /// `item(for:)`.
        case item
        /// `enumerateItems` and `enumerateChanges` of any enumerator.
        case enumerate
        /// Whole, partial and incremental content fetches.
        case fetch
        case create
        case modify
        case delete
        /// Every call above.
        case any
    }

    /// Which items a rule applies to.
    public enum Target: Sendable, Hashable {
        case everything
        /// Items with this name (for enumeration: the container's name).
        case filename(Filename)
        case identifier(ItemIdentifier)
    }

    public var effect: Effect
    public var operation: Operation
    public var target: Target
    /// The rule fires at most this many times, then stays inert (nil: every time), for tests of
    /// retries: "fail twice, then succeed".
    public var limit: Int?

    public init(_ effect: Effect, on operation: Operation = .any, for target: Target = .everything, limit: Int? = nil) {
        self.effect = effect
        self.operation = operation
        self.target = target
        self.limit = limit
    }

    /// True when the rule applies to a call of `operation` about an item with these identifiers and names.
    func matches(_ operation: Operation, identifier: ItemIdentifier?, filenames: [Filename]) -> Bool {
        guard covers(operation) else { return false }
        switch target {
        case .everything: return true
        case .identifier(let wanted): return identifier == wanted
        case .filename(let wanted): return filenames.contains(wanted)
        }
    }

    /// True when the rule applies to calls of `operation`, whatever the item.
    func covers(_ operation: Operation) -> Bool { self.operation == .any || self.operation == operation }

    /// True when the rule picks items by name, so the injector must know names.
    var targetsFilename: Bool {
        if case .filename = target { true } else { false }
    }

    public var description: String {
        let effect =
            switch self.effect {
            case .hang: "hang"
            case .error(let error): "error=\(error)"
            case .delay(let duration): "delay=\(duration)"
            case .shortContent(let bytes): "short=\(bytes)"
            case .corruptRange: "corrupt"
            case .hangAfterCall: "hang-after"
            case .errorAfterCall(let error): "error-after=\(error)"
            }
        let target =
            switch self.target {
            case .everything: ""
            case .filename(let name): ":\(name)"
            case .identifier(let identifier): ":id \(identifier)"
            }
        return "\(effect):\(operation.rawValue)\(target)\(limit.map { " (at most \($0) times)" } ?? "")"
    }
}
