import BlockCache
import Foundation
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
        /// Reads answered from bytes already local, the blocks they touched, and reads that waited
        /// for the remote.
        public var fromCache = 0
        public var blocksFromCache = 0
        public var waited = 0
        /// Opens whose reads the kernel answers from the cache file itself (FUSE passthrough):
        /// those reads are not counted above.
        public var passthroughOpens = 0
        /// Writers (of new files, or truncating) whose writes the kernel makes itself, on the
        /// local content.
        public var passthroughWriters = 0
    }

    public struct Listings: Sendable, Codable, Hashable {
        /// Directories enumerated from the provider and pages received.
        public var directories = 0
        public var pages = 0
    }

    /// One content fetch in flight: which file, which bytes, how many have arrived.
    public struct Download: Sendable, Codable, Hashable {
        public var name: String
        public var offset: UInt64
        public var length: UInt64
        public var received: UInt64
        /// The file the request is for (its cache file number), its size and how much of it is
        /// local: one file has many requests in flight, and `fpfs status --watch` shows it once.
        /// Nil from a daemon older than these fields.
        public var file: Int64?
        public var fileSize: UInt64?
        public var fileLocal: UInt64?
    }

    public struct Replication: Sendable, Codable, Hashable {
        /// Rounds of asking the remote for changes that ended, changes applied, rounds that had to
        /// compare everything (no anchor, or an expired one), and what the last failed round said.
        public var rounds = 0
        public var changes = 0
        public var fullComparisons = 0
        public var lastError: String?
    }

    public struct Uploads: Sendable, Codable, Hashable {
        /// Journal entries sent, bytes of contents among them, and attempts that failed.
        public var sent = 0
        public var bytes: UInt64 = 0
        public var failed = 0
    }

    /// Something that went wrong, for `fpfs status`: when (seconds since 1970) and what.
    public struct Problem: Sendable, Codable, Hashable {
        public var time: Double
        public var message: String
    }

    /// How many problems `errors` keeps.
    public static let problemsKept = 10

    /// One upload of contents in flight: which file, how many bytes, how many have left.
    public struct Upload: Sendable, Codable, Hashable {
        public var name: String
        public var length: UInt64
        public var sent: UInt64
    }

    public var fetches = Fetches()
    public var reads = Reads()
    public var listings = Listings()
    public var replication = Replication()
    public var uploads = Uploads()
    /// The latest problems, oldest first.
    public var errors: [Problem] = []
    public var downloads: [Download] = []
    public var uploading: [Upload] = []
    /// Reads refused to non-materializing processes, by process name.
    public var blocked: [String: Int] = [:]
}

/// The live counters behind `StatisticsSnapshot`.
final class Statistics: Sendable {
    private struct State {
        var snapshot = StatisticsSnapshot()
        var downloads: [UInt64: StatisticsSnapshot.Download] = [:]
        /// The content each download fills, for its file's local bytes.
        var contents: [UInt64: CachedContent] = [:]
        var nextDownload: UInt64 = 0
        var uploading: [UInt64: StatisticsSnapshot.Upload] = [:]
        var nextUpload: UInt64 = 0
    }
    /// Guards every counter.
    private let state = Mutex(State())

    var snapshot: StatisticsSnapshot {
        let (snapshot, contents) = state.withLock { state in
            var snapshot = state.snapshot
            snapshot.downloads = state.downloads.sorted { $0.key < $1.key }.map(\.value)
            snapshot.uploading = state.uploading.sorted { $0.key < $1.key }.map(\.value)
            return (snapshot, state.downloads.keys.sorted().map { state.contents[$0] })
        }
        // Outside the lock: a content's presence has a lock of its own.
        var complete = snapshot
        for (index, content) in contents.enumerated() {
            complete.downloads[index].fileLocal = content?.presentBytes
        }
        return complete
    }

    func update(_ body: (inout StatisticsSnapshot) -> Void) { state.withLock { body(&$0.snapshot) } }

    /// Counts an upload of `length` bytes of contents that begins; returns its number.
    func uploadStarted(name: String, length: UInt64) -> UInt64 {
        state.withLock { state in
            state.nextUpload += 1
            state.uploading[state.nextUpload] = .init(name: name, length: length, sent: 0)
            return state.nextUpload
        }
    }

    /// `bytes` more of upload `upload` left (a retried request may send them again: the count
    /// stops at the length).
    func uploadProgressed(_ upload: UInt64, bytes: UInt64) {
        state.withLock { state in
            guard var entry = state.uploading[upload] else { return }
            let added = min(bytes, entry.length - entry.sent)
            entry.sent += added
            state.uploading[upload] = entry
            state.snapshot.uploads.bytes += added
        }
    }

    /// Ends upload `upload`; when it succeeded, what was not reported counts as sent.
    func uploadEnded(_ upload: UInt64, succeeded: Bool) {
        state.withLock { state in
            guard let entry = state.uploading.removeValue(forKey: upload) else { return }
            if succeeded { state.snapshot.uploads.bytes += entry.length - entry.sent }
        }
    }

    /// Keeps `message` among the latest problems.
    func noteProblem(_ message: String) {
        let problem = StatisticsSnapshot.Problem(time: Date().timeIntervalSince1970, message: message)
        state.withLock { state in
            state.snapshot.errors.append(problem)
            state.snapshot.errors.removeFirst(max(0, state.snapshot.errors.count - StatisticsSnapshot.problemsKept))
        }
    }

    /// Counts a provider fetch that begins; returns its number for progress and the end.
    func fetchStarted(name: String, range: Range<UInt64>, of content: CachedContent) -> UInt64 {
        state.withLock { state in
            state.snapshot.fetches.started += 1
            state.snapshot.fetches.inFlight += 1
            state.snapshot.fetches.maxInFlight = max(
                state.snapshot.fetches.maxInFlight, state.snapshot.fetches.inFlight)
            state.nextDownload += 1
            state.downloads[state.nextDownload] = .init(
                name: name, offset: range.lowerBound, length: UInt64(range.count), received: 0,
                file: content.fileNumber, fileSize: content.size)
            state.contents[state.nextDownload] = content
            return state.nextDownload
        }
    }

    func fetchProgressed(_ download: UInt64, bytes: UInt64) {
        state.withLock { state in
            state.snapshot.fetches.bytes += bytes
            state.downloads[download]?.received += bytes
        }
    }

    func fetchEnded(_ download: UInt64, failed: Bool) {
        state.withLock { state in
            state.snapshot.fetches.inFlight -= 1
            if failed { state.snapshot.fetches.failed += 1 }
            state.downloads[download] = nil
            state.contents[download] = nil
        }
    }
}
