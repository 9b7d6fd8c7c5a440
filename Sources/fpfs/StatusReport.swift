import Foundation
import VFS

#if canImport(Glibc)
    import Glibc
#endif

/// What `fpfs status` shows: which mount this is and what its engine is doing.
struct StatusReport: Codable {
    /// The facts of the mount that do not change while it runs.
    struct Context: Sendable {
        let remote: String
        let mountpoint: String
        let cacheDirectory: String
        let offline: Bool
        let pipelineDepth: Int
        let blockSize: UInt64
        let settings: Settings
    }

    /// The mount's options that `fpfs status --json` shows, so that a script (or a test) sees
    /// what an fstab line's `-o` options became.
    struct Settings: Codable, Sendable {
        var readOnly: Bool
        /// Seconds between polls of the remote; 0: none.
        var pollInterval: Double
        var access: MountAccess
    }

    var pid: Int32
    var remote: String
    var mountpoint: String
    var cacheDirectory: String
    var offline: Bool
    var pipelineDepth: Int
    var blockSize: UInt64
    /// Nil from a daemon older than this field.
    var settings: Settings?
    var fetches: StatisticsSnapshot.Fetches
    var reads: StatisticsSnapshot.Reads
    var listings: StatisticsSnapshot.Listings
    var downloads: [StatisticsSnapshot.Download]
    /// Contents being sent to the remote.
    var uploading: [StatisticsSnapshot.Upload]
    /// Reads refused to non-materializing processes, by process name.
    var blocked: [String: Int]
    /// Local changes not yet on the remote.
    var uploads: UploadQueue
    /// What the cache holds against its bound.
    var cache: CacheUsage
    /// Local changes sent since mount.
    var sent: StatisticsSnapshot.Uploads
    /// Rounds of remote changes since mount.
    var replication: StatisticsSnapshot.Replication
    /// The latest problems, oldest first.
    var errors: [StatisticsSnapshot.Problem]
    /// When the report was made (seconds since 1970), for rates between two reports.
    var time: Double

    init(context: Context, statistics: StatisticsSnapshot, uploads: UploadQueue, cache: CacheUsage) {
        self.pid = getpid()
        self.remote = context.remote
        self.mountpoint = context.mountpoint
        self.cacheDirectory = context.cacheDirectory
        // A mount that started offline stays so until a round of remote changes gets an answer.
        self.offline = context.offline && (statistics.replication.rounds == 0 || statistics.replication.lastError != nil)
        self.pipelineDepth = context.pipelineDepth
        self.blockSize = context.blockSize
        self.settings = context.settings
        self.fetches = statistics.fetches
        self.reads = statistics.reads
        self.listings = statistics.listings
        self.downloads = statistics.downloads
        self.uploading = statistics.uploading
        self.blocked = statistics.blocked
        self.uploads = uploads
        self.cache = cache
        self.sent = statistics.uploads
        self.replication = statistics.replication
        self.errors = statistics.errors
        self.time = Date().timeIntervalSince1970
    }

    func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }

    /// The report for a person, with a progress bar per download and upload in flight; with `previous` (an
    /// earlier report of the same mount, as `--watch` has), also the rates since then. With
    /// `width` (a terminal's), no line is wider than it.
    func text(since previous: StatusReport? = nil, width: Int? = nil) -> String {
        let rates = previous.map { previous -> (down: String, up: String) in
            let seconds = max(time - previous.time, 0.001)
            func rate(_ now: UInt64, _ then: UInt64) -> String {
                Self.bytes(UInt64(Double(now >= then ? now - then : 0) / seconds)) + "/s"
            }
            return (rate(fetches.bytes, previous.fetches.bytes), rate(sent.bytes, previous.sent.bytes))
        }
        var lines = [
            "fpfs mount \(mountpoint)\(offline ? "  (OFFLINE: serving what is local)" : "")",
            "  remote:     \(remote)",
            "  cache:      \(cacheDirectory) (blocks of \(Self.bytes(blockSize)))",
            "  daemon:     pid \(pid)",
            "  fetches:    \(fetches.inFlight) in flight of at most \(pipelineDepth) (most at once: \(fetches.maxInFlight)); "
                + "\(fetches.started) started, \(fetches.failed) failed, \(Self.bytes(fetches.bytes)) received"
                + (rates.map { ", now \($0.down)" } ?? ""),
            "  reads:      \(reads.fromCache) from local bytes (\(reads.blocksFromCache) blocks), "
                + "\(reads.waited) waited for the remote, \(reads.passthroughOpens) opens read by the kernel itself, "
                + "\(reads.passthroughWriters) writers through it",
            "  listings:   \(listings.directories) directories, \(listings.pages) pages",
            "  cached:     \(Self.bytes(cache.bytes))"
                + (cache.bound.map { " of at most \(Self.bytes($0)) (--cache-size)" } ?? "")
                + (cache.pinned.map { "; pinned files: \(Self.bytes($0))" } ?? ""),
            "  changes:    \(replication.rounds) rounds asked the remote, \(replication.changes) changes applied"
                + (replication.lastError.map { "; last round failed: \($0)" } ?? ""),
            "  uploads:    \(uploads.pending) changes waiting for the remote (\(Self.bytes(uploads.bytes)))"
                + (uploads.failing > 0 ? ", \(uploads.failing) failed at least once" : "")
                + ((uploads.refused ?? 0) > 0 ? ", \(uploads.refused ?? 0) refused by the remote" : "")
                + "; \(sent.sent) sent (\(Self.bytes(sent.bytes)))" + (rates.map { ", now \($0.up)" } ?? ""),
        ]
        for entry in uploads.first {
            var line = "    \(entry.isSending ? "sending" : "waiting") \(entry.action) \(entry.name)"
            if entry.bytes > 0 { line += " (\(Self.bytes(entry.bytes)))" }
            if entry.attempts > 0 { line += ": \(entry.attempts) attempts, last: \(entry.lastError ?? "?")" }
            if let blocker = entry.waitsFor {
                line +=
                    entry.isStuck == true ? " — stuck: waits for \(blocker), which failed" : " — waits for \(blocker)"
            }
            lines.append(line)
        }
        if uploads.pending > uploads.first.count {
            lines.append("    … and \(uploads.pending - uploads.first.count) more")
        }
        if blocked.isEmpty {
            lines.append("  blocked:    none")
        } else {
            let refusals = blocked.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            lines.append("  blocked:    " + refusals.joined(separator: ", ") + " (reads refused)")
        }
        lines.append("  errors:     " + (errors.isEmpty ? "none" : "\(errors.count) recent"))
        for problem in errors.suffix(5) {
            lines.append("    \(Self.age(of: problem.time, now: time)) ago: \(problem.message)")
        }
        let room = width ?? 1000
        lines += FileDownload.files(of: downloads, since: previous.map { ($0.downloads, time - $0.time) }).map {
            $0.line(width: room)
        }
        for upload in uploading {
            let fraction = upload.length == 0 ? 1 : Double(upload.sent) / Double(upload.length)
            lines.append(
                TerminalLine.bar(
                    fraction, then: ["\(upload.name) (\(Self.bytes(upload.sent)) of \(Self.bytes(upload.length)))"],
                    width: room, prefix: "  ↑ "))
        }
        return lines.map { TerminalLine.fit($0, width: room) }.joined(separator: "\n")
    }

    /// How long ago `time` was, in the largest whole unit.
    private static func age(of time: Double, now: Double) -> String {
        let seconds = Int(max(now - time, 0))
        if seconds < 120 { return "\(seconds) s" }
        if seconds < 7200 { return "\(seconds / 60) min" }
        return "\(seconds / 3600) h"
    }

    /// `[#####-----]  50%`: a bar of `width` characters and the percentage.
    static func bar(_ fraction: Double, width: Int = 30) -> String {
        let clamped = max(0, min(1, fraction))
        let filled = Int(clamped * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        return "[\(bar)] \(String(Int(clamped * 100)).leftPadded(to: 3))%"
    }

    /// Bytes in the largest binary unit that keeps a number of at least 1.
    static func bytes(_ count: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f", value) + " " + units[unit]
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: " ", count: max(0, width - count)) + self
    }
}
