import FileProviderKit
import Foundation
import Synchronization

/// The set of fault rules one or more `FaultInjectingProvider`s obey. Rules can be added and
/// removed while calls run — removing a rule lets calls hanging on it go ahead — so a test can
/// take the remote away and bring it back.
///
/// Rules that name a file need the names of the items calls are about: the injector learns them
/// from every item passing through, and asks the inner provider's `item(for:)` for an identifier
/// it has not seen yet (that lookup shows up in the inner provider's call counts).
public final class FaultInjector: Sendable {
    /// Names a rule added to the injector, to remove it or count its firings.
    public struct RuleID: Hashable, Sendable {
        fileprivate let value: Int
    }

    /// The content faults a fetch must apply after the call-level effects ran.
    struct ContentFaults {
        var shortBytes: UInt64?
        var corruptRange = false
    }

    private struct Hang {
        let rule: RuleID
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var rules: [(id: RuleID, rule: FaultRule, fired: Int)] = []
        var nextRule = 0
        var filenames: [ItemIdentifier: Filename] = [:]
        var hangs: [UUID: Hang] = [:]
    }

    private let state = Mutex(State())

    public init(rules: [FaultRule] = []) {
        for rule in rules { add(rule) }
    }

    /// An injector with the rules of a `--inject-faults` spec.
    public convenience init(spec: String) throws(FaultSpecError) {
        self.init(rules: try FaultRule.parse(spec))
    }

    /// Wraps `provider` so its calls obey this injector, keeping the optional capabilities
    /// (partial and incremental fetching) the provider has, since the engine looks for them with
    /// `as?`. Works on an existential `any FileProvider` too.
    public func wrap(_ provider: some FileProvider) -> any FileProvider {
        FaultInjectingProvider(wrapping: provider, injector: self)
    }

    /// Adds a rule; it applies from the next call on.
    @discardableResult
    public func add(_ rule: FaultRule) -> RuleID {
        state.withLock { state in
            let id = RuleID(value: state.nextRule)
            state.nextRule += 1
            state.rules.append((id, rule, 0))
            return id
        }
    }

    /// Removes a rule; calls hanging on it go ahead.
    public func remove(_ id: RuleID) {
        let released = state.withLock { state in
            state.rules.removeAll { $0.id == id }
            let released = state.hangs.filter { $0.value.rule == id }
            for key in released.keys { state.hangs[key] = nil }
            return released.values.map(\.continuation)
        }
        for continuation in released { continuation.resume() }
    }

    /// Removes every rule: the remote is healthy again.
    public func removeAll() {
        for id in state.withLock({ $0.rules.map(\.id) }) { remove(id) }
    }

    /// The rules in force, in the order they apply.
    public var rules: [FaultRule] { state.withLock { $0.rules.map(\.rule) } }

    /// How many calls a rule has affected so far.
    public func firedCount(_ id: RuleID) -> Int { state.withLock { $0.rules.first { $0.id == id }?.fired ?? 0 } }

    /// Calls hanging right now, for tests that wait until a call is stuck before acting.
    public var hangingCalls: Int { state.withLock { $0.hangs.count } }

    // MARK: Used by the wrappers

    /// Remembers the names of items that passed through.
    func learn(_ items: [Item]) {
        guard !items.isEmpty else { return }
        state.withLock { state in
            for item in items { state.filenames[item.identifier] = item.filename }
        }
    }

    /// Applies the rules matching a call: waits, hangs or throws as they say, and returns the
    /// content faults for a fetch to apply. `lookUp` finds an item's name the injector has not
    /// learned yet; it runs only when a rule needs that name. Called `afterCall` once the inner
    /// provider has answered, it applies the rules whose effect comes after the call (`hang-after`,
    /// `error-after`), which it leaves out before.
    func intercept(
        _ operation: FaultRule.Operation, identifier: ItemIdentifier?, filenames: [Filename] = [],
        afterCall: Bool = false, lookUp: () async -> Item?
    ) async throws -> ContentFaults {
        let needsName = state.withLock { state in
            guard let identifier, state.filenames[identifier] == nil else { return false }
            return state.rules.contains { $0.rule.targetsFilename && $0.rule.covers(operation) }
        }
        if needsName, let item = await lookUp() { learn([item]) }
        let fired = state.withLock { state in
            let names = filenames + (identifier.flatMap { state.filenames[$0] }.map { [$0] } ?? [])
            var fired: [(RuleID, FaultRule.Effect)] = []
            for index in state.rules.indices {
                let entry = state.rules[index]
                guard entry.rule.limit.map({ entry.fired < $0 }) ?? true,
                    entry.rule.effect.isAfterCall == afterCall,
                    entry.rule.matches(operation, identifier: identifier, filenames: names)
                else { continue }
                state.rules[index].fired += 1
                fired.append((entry.id, entry.rule.effect))
            }
            return fired
        }
        var faults = ContentFaults()
        for (rule, effect) in fired {
            switch effect {
            case .hang, .hangAfterCall: try await hang(on: rule)
            case .error(let error), .errorAfterCall(let error): throw error
            case .delay(let duration): try await Task.sleep(for: duration)
            case .shortContent(let bytes): faults.shortBytes = min(bytes, faults.shortBytes ?? .max)
            case .corruptRange: faults.corruptRange = true
            }
        }
        return faults
    }

    /// Suspends until the task is cancelled (throwing `CancellationError`) or the rule is removed.
    private func hang(on rule: RuleID) async throws {
        let key = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let answer: Result<Void, any Error>? = state.withLock { state in
                    // Checked under the lock the cancellation handler takes, so no wake-up is lost.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if !state.rules.contains(where: { $0.id == rule }) { return .success(()) }
                    state.hangs[key] = Hang(rule: rule, continuation: continuation)
                    return nil
                }
                if let answer { continuation.resume(with: answer) }
            }
        } onCancel: {
            state.withLock { $0.hangs.removeValue(forKey: key) }?.continuation.resume(throwing: CancellationError())
        }
    }
}
