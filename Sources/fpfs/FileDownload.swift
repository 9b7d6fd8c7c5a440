import VFS

/// One file being downloaded, as `fpfs status` shows it: a file has many requests in flight (one
/// per read-ahead piece), and one line per request said nothing about the file.
struct FileDownload {
    let name: String
    /// The file's size and bytes local; for a daemon that does not say, those of its requests.
    let size: UInt64
    let local: UInt64
    /// Bytes per second since the last report, when there was one.
    let rate: Double?

    /// The files of `downloads`, in the order their first requests started; `previous` (the
    /// last report's downloads and the seconds since) gives the rates.
    static func files(
        of downloads: [StatisticsSnapshot.Download], since previous: ([StatisticsSnapshot.Download], Double)?
    ) -> [FileDownload] {
        var order: [Int64] = []
        var groups: [Int64: [StatisticsSnapshot.Download]] = [:]
        for (index, download) in downloads.enumerated() {
            let key = download.file ?? -Int64(index) - 1
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(download)
        }
        let before = previous.map { previous in
            Dictionary(previous.0.compactMap { old in old.file.map { ($0, old.fileLocal ?? 0) } }) { max($0, $1) }
        }
        return order.map { key in
            let requests = groups[key]!
            let first = requests[0]
            let size = first.fileSize ?? requests.reduce(0) { $0 + $1.length }
            let local = requests.compactMap(\.fileLocal).max() ?? requests.reduce(0) { $0 + $1.received }
            var rate: Double?
            if let previous, let then = before?[key] {
                rate = Double(local >= then ? local - then : 0) / max(previous.1, 0.001)
            }
            return FileDownload(name: first.name, size: size, local: local, rate: rate)
        }
    }

    /// `  ↓ [####------]  40% NAME (1.0 MiB of 2.5 MiB, 300.0 KiB/s)`, within `width` columns.
    func line(width: Int) -> String {
        let fraction = size == 0 ? 1 : Double(local) / Double(size)
        let speed = rate.map { ", " + StatusReport.bytes(UInt64($0)) + "/s" } ?? ""
        return TerminalLine.bar(
            fraction,
            then: [
                "\(name) (\(StatusReport.bytes(local)) of \(StatusReport.bytes(size))\(speed))",
                "\(name) (\(StatusReport.bytes(local))\(speed))",
            ], width: width, prefix: "  ↓ ")
    }
}
