import Foundation

extension LocalProvider {
    /// How a `LocalProvider` behaves beyond its folder: knobs that make it act like a slow remote
    /// (for demos and tests of the engine), and where it keeps its own state.
    public struct Options: Sendable {
        /// Waited before every request, like a remote's round trip. Zero by default.
        public var requestDelay: Duration
        /// Bytes per second that all content fetches of the provider share, like a slow link; nil
        /// for no limit. Must be positive.
        public var bandwidthLimit: UInt64?
        /// A per-mount folder for the provider's change-enumeration snapshots, so sync anchors
        /// survive a restart; nil keeps them in memory and every restart starts a new history.
        public var stateDirectory: URL?

        /// Defaults: no delay, no limit, state in memory — a plain, fast local remote.
        public init(requestDelay: Duration = .zero, bandwidthLimit: UInt64? = nil, stateDirectory: URL? = nil) {
            self.requestDelay = requestDelay
            self.bandwidthLimit = bandwidthLimit
            self.stateDirectory = stateDirectory
        }
    }
}
