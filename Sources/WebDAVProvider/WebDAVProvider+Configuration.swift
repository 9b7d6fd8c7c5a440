import Foundation

extension WebDAVProvider {
    /// Where the server is and how to talk to it.
    public struct Configuration: Sendable {
        /// The mounted collection: `http://` or `https://`, host, port and path.
        public var url: URL
        /// Nil for a server that asks for none.
        public var credentials: WebDAVCredentials?
        /// A per-mount folder for change-enumeration snapshots and long listings; nil keeps
        /// snapshots in memory and spools listings to the system's temporary folder.
        public var stateDirectory: URL?
        /// Connections kept open to the server at most; at least the engine's pipeline depth, so
        /// range requests run side by side.
        public var maximumConnections: Int
        /// How long to wait for a connection to open.
        public var connectTimeout: Duration
        /// How long a request may wait for the server's next bytes before it counts as failed.
        public var readTimeout: Duration
        /// How often a request that failed on the way (connection lost, 500, 502, 503, 504) is sent
        /// again, with growing pauses, before the failure is reported.
        public var retries: Int
        /// Symlinks are kept as `NAME.rclonelink` files holding the target, as rclone does (`--links`).
        public var symlinksAsMarkerFiles: Bool

        public init(
            url: URL, credentials: WebDAVCredentials? = nil, stateDirectory: URL? = nil, maximumConnections: Int = 8,
            connectTimeout: Duration = .seconds(10), readTimeout: Duration = .seconds(30), retries: Int = 2,
            symlinksAsMarkerFiles: Bool = false
        ) {
            self.url = url
            self.credentials = credentials
            self.stateDirectory = stateDirectory
            self.maximumConnections = maximumConnections
            self.connectTimeout = connectTimeout
            self.readTimeout = readTimeout
            self.retries = retries
            self.symlinksAsMarkerFiles = symlinksAsMarkerFiles
        }
    }
}
