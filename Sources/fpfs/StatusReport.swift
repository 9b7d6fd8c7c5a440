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
    }

    var pid: Int32
    var remote: String
    var mountpoint: String
    var cacheDirectory: String
    var offline: Bool
    var pipelineDepth: Int
    var blockSize: UInt64
    var fetches: StatisticsSnapshot.Fetches
    var reads: StatisticsSnapshot.Reads
    var listings: StatisticsSnapshot.Listings
    var downloads: [StatisticsSnapshot.Download]
    /// Reads refused to non-materializing processes, by process name.
    var blocked: [String: Int]
    /// Local changes not yet on the remote.
    var uploads: UploadQueue

    init(context: Context, statistics: StatisticsSnapshot, uploads: UploadQueue) {
        self.pid = getpid()
        self.remote = context.remote
        self.mountpoint = context.mountpoint
        self.cacheDirectory = context.cacheDirectory
        self.offline = context.offline
        self.pipelineDepth = context.pipelineDepth
        self.blockSize = context.blockSize
        self.fetches = statistics.fetches
        self.reads = statistics.reads
        self.listings = statistics.listings
        self.downloads = statistics.downloads
        self.blocked = statistics.blocked
        self.uploads = uploads
    }

    func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }

    /// The report for a person, with a progress bar per download in flight.
    var text: String {
        var lines = [
            "fpfs mount \(mountpoint)\(offline ? "  (OFFLINE: serving what is local)" : "")",
            "  remote:     \(remote)",
            "  cache:      \(cacheDirectory) (blocks of \(Self.bytes(blockSize)))",
            "  daemon:     pid \(pid)",
            "  fetches:    \(fetches.inFlight) in flight of at most \(pipelineDepth) (most at once: \(fetches.maxInFlight)); "
                + "\(fetches.started) started, \(fetches.failed) failed, \(Self.bytes(fetches.bytes)) received",
            "  reads:      \(reads.fromCache) from local bytes (\(reads.blocksFromCache) blocks), "
                + "\(reads.waited) waited for the remote",
            "  listings:   \(listings.directories) directories, \(listings.pages) pages",
            "  uploads:    \(uploads.pending) changes waiting for the remote (\(Self.bytes(uploads.bytes)))"
                + (uploads.failing > 0 ? ", \(uploads.failing) failed at least once" : ""),
        ]
        for entry in uploads.first {
            var line = "    \(entry.action) \(entry.name)"
            if entry.bytes > 0 { line += " (\(Self.bytes(entry.bytes)))" }
            if entry.attempts > 0 { line += ": \(entry.attempts) attempts, last: \(entry.lastError ?? "?")" }
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
        for download in downloads {
            lines.append("  " + Self.progressBar(download))
        }
        return lines.joined(separator: "\n")
    }

    private static func progressBar(_ download: StatisticsSnapshot.Download) -> String {
        let fraction = download.length == 0 ? 1 : Double(download.received) / Double(download.length)
        return bar(fraction) + " \(download.name) "
            + "(\(bytes(download.received)) of \(bytes(download.length)) at offset \(bytes(download.offset)))"
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
