import FileProviderKit
import Synchronization

/// The moves the uploader is sending on a remote whose identifiers are places, by the identifier
/// each moves (and, for a folder, the prefix of the identifiers below it). A fetch under such an
/// identifier can reach the remote after the move did and get `noSuchItem`; it waits for the move
/// to be recorded, when its content has the new identifier, and asks again (DECISIONS 303).
final class MovesInFlight: Sendable {
    private struct Move {
        let identifier: ItemIdentifier
        let prefix: String?

        func covers(_ other: ItemIdentifier) -> Bool {
            other == identifier || prefix.map { other.rawValue.hasPrefix($0) } == true
        }
    }

    private struct State {
        var moves: [UInt64: Move] = [:]
        var nextToken: UInt64 = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    /// Notes a move of `identifier` (with `prefix` below it, for a folder) about to be sent;
    /// `end` with the token once it is recorded, whatever came of it.
    func begin(_ identifier: ItemIdentifier, prefix: String?) -> UInt64 {
        state.withLock { state in
            state.nextToken += 1
            state.moves[state.nextToken] = Move(identifier: identifier, prefix: prefix)
            return state.nextToken
        }
    }

    func end(_ token: UInt64) {
        let waiters = state.withLock { state in
            state.moves[token] = nil
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once no move being sent covers `identifier`. Each move is bounded by the remote
    /// bound of the calls that send it.
    func waitUntilSent(_ identifier: ItemIdentifier) async {
        while isMoving(identifier) {
            await withCheckedContinuation { continuation in
                let waits = state.withLock { state in
                    guard Self.isMoving(identifier, in: state) else { return false }
                    state.waiters.append(continuation)
                    return true
                }
                if !waits { continuation.resume() }
            }
        }
    }

    private func isMoving(_ identifier: ItemIdentifier) -> Bool {
        state.withLock { Self.isMoving(identifier, in: $0) }
    }

    private static func isMoving(_ identifier: ItemIdentifier, in state: State) -> Bool {
        state.moves.values.contains { $0.covers(identifier) }
    }
}
