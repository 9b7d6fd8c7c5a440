import Foundation

extension S3Provider {
    /// Where the bucket is and how to talk to it.
    public struct Configuration: Sendable {
        /// The server: `https://s3.REGION.amazonaws.com`, or a gateway's `http(s)://host:port`.
        public var endpoint: URL
        public var bucket: String
        /// The mounted "folder" of the bucket: "" for all of it, else keys starting `PREFIX/`
        /// (given with or without the final slash).
        public var prefix: String
        /// The region requests are signed for.
        public var region: String
        /// `https://host/BUCKET/KEY` rather than `https://BUCKET.host/KEY`.
        public var pathStyle: Bool
        /// Nil sends requests unsigned (a public bucket).
        public var credentials: S3Credentials?
        /// A per-mount folder for change-enumeration snapshots; nil keeps them in memory.
        public var stateDirectory: URL?
        /// Connections kept open to the server at most.
        public var maximumConnections: Int
        public var connectTimeout: Duration
        public var readTimeout: Duration
        /// How often a request that failed on the way (no answer, 500, 503 SlowDown) is sent again,
        /// with growing, jittered pauses, before the failure is reported.
        public var retries: Int
        /// Files larger than this go up as multipart uploads (`--s3-multipart-threshold`).
        public var multipartThreshold: Int64 = 64 << 20
        /// The size of each part (`--s3-part-size`), raised where a file would need more than
        /// 10 000 parts; at least 5 MiB, S3's smallest part but the last.
        public var partSize: Int64 = 16 << 20
        /// Parts of one multipart upload sent side by side at most (`--upload-depth`).
        public var partsInFlight = 4
        /// Objects larger than this are copied (renamed, given new metadata) part by part
        /// (`UploadPartCopy`): `CopyObject` takes at most 5 GiB.
        public var multipartCopyThreshold: Int64 = 5 << 30
        /// A file of PEM certificates trusted for `https` instead of the system's CA store
        /// (`AWS_CA_BUNDLE`, the profile's `ca_bundle`); nil: the system's.
        public var caBundle: String?
        /// Symlinks are kept as `NAME.rclonelink` objects holding the target (`--links`,
        /// `LinkMarker`); without, such objects are files.
        public var symlinksAsMarkerFiles = false

        public init(
            endpoint: URL, bucket: String, prefix: String = "", region: String = "us-east-1", pathStyle: Bool = true,
            credentials: S3Credentials? = nil, stateDirectory: URL? = nil, maximumConnections: Int = 8,
            connectTimeout: Duration = .seconds(10), readTimeout: Duration = .seconds(30), retries: Int = 3
        ) {
            self.endpoint = endpoint
            self.bucket = bucket
            self.prefix = prefix
            self.region = region
            self.pathStyle = pathStyle
            self.credentials = credentials
            self.stateDirectory = stateDirectory
            self.maximumConnections = maximumConnections
            self.connectTimeout = connectTimeout
            self.readTimeout = readTimeout
            self.retries = retries
        }

        /// The prefix as keys start with it: "" or `PREFIX/`, without a leading slash.
        var keyPrefix: String {
            let trimmed = prefix.drop { $0 == "/" }
            if trimmed.isEmpty { return "" }
            return trimmed.hasSuffix("/") ? String(trimmed) : trimmed + "/"
        }
    }
}
