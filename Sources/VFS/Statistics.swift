import Synchronization

/// What the engine has done since mount, for `fpfs status` and for tests.
public struct StatisticsSnapshot: Sendable, Codable, Hashable {
    public struct Fetches: Sendable, Codable, Hashable {
        /// Provider content fetches begun, in flight now, the most ever in flight at once, bytes
        /// received, and fetches that failed.
        public var started = 0
        public var inFlight = 0
        public var maxInFlight = 0
        public var bytes: UInt64 = 0
        public var failed = 0
    }

    public struct Reads: Sendable, Codable, Hashable {
        /// Reads answered from bytes already local, and reads that waited for a fetch.
        public var fromCache = 0
        public var waited = 0
    }

    public struct Listings: Sendable, Codable, Hashable {
        /// Directories enumerated from the provider and pages received.
        public var directories = 0
        public var pages = 0
    }

    public var fetches = Fetches()
    public var reads = Reads()
    public var listings = Listings()
}

/// The live counters behind `StatisticsSnapshot`.
final class Statistics: Sendable {
    private let state = Mutex(StatisticsSnapshot())

    var snapshot: StatisticsSnapshot { state.withLock { $0 } }

    func update(_ body: (inout StatisticsSnapshot) -> Void) { state.withLock { body(&$0) } }

    func fetchStarted() {
        update {
            $0.fetches.started += 1
            $0.fetches.inFlight += 1
            $0.fetches.maxInFlight = max($0.fetches.maxInFlight, $0.fetches.inFlight)
        }
    }

    func fetchEnded(failed: Bool) {
        update {
            $0.fetches.inFlight -= 1
            if failed { $0.fetches.failed += 1 }
        }
    }
}
