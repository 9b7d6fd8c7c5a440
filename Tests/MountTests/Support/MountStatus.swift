/// What `fpfs status MOUNTPOINT --json` reports; only the fields the tests read.
struct MountStatus: Decodable, Sendable {
    /// Counters of content fetches from the provider since the mount started.
    struct Fetches: Decodable, Sendable {
        var started: Int
        var inFlight: Int
        var maxInFlight: Int
        var bytes: Int
        var failed: Int
    }

    /// Reads answered by the daemon from local bytes, and opens the kernel reads itself.
    struct Reads: Decodable, Sendable {
        var fromCache: Int
        var passthroughOpens: Int
        var passthroughWriters: Int
    }

    /// Local changes not yet on the remote.
    struct Uploads: Decodable, Sendable {
        var pending: Int
        var failing: Int
    }

    /// One upload of contents in flight.
    struct Upload: Decodable, Sendable {
        var name: String
    }

    /// What the cache holds against its bound.
    struct Cache: Decodable, Sendable {
        var bytes: Int
        var bound: Int?
    }

    var pid: Int32
    /// The mount serves what is local: the remote could not be reached at start, nor since.
    var offline: Bool
    var fetches: Fetches
    var reads: Reads
    var uploads: Uploads
    /// Names of the files whose contents are being sent now.
    var uploading: [Upload]
    /// Reads refused to non-materializing processes, by process name.
    var blocked: [String: Int]
    var cache: Cache
}
