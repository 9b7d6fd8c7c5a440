/// One request as Apache's access log recorded it, for tests that count what the server sent.
public struct AccessLogEntry: Sendable, Hashable {
    public var method: String
    /// The URL path, decoded.
    public var path: String
    public var status: Int
    /// Bytes of body sent.
    public var bytesSent: UInt64
    /// The request's `Range` header, if it had one.
    public var range: String?
    /// When the request began, in microseconds since 1970.
    public var start: UInt64
    /// How long the server took to answer, in microseconds.
    public var duration: UInt64

    /// Parses one line of the tab-separated format `WebDAVTestServer` configures.
    init?(line: Substring) {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
        guard fields.count == 7, let start = UInt64(fields[0]), let duration = UInt64(fields[1]),
            let status = Int(fields[3])
        else { return nil }
        self.start = start
        self.duration = duration
        method = String(fields[2])
        self.status = status
        bytesSent = UInt64(fields[4]) ?? 0
        range = fields[5] == "-" ? nil : String(fields[5])
        path = String(fields[6])
    }
}

extension Sequence<AccessLogEntry> {
    /// The most requests (of `method`, or of any) the server was working on at one moment.
    public func maximumConcurrency(method: String? = nil) -> Int {
        var events: [(time: UInt64, change: Int)] = []
        for entry in self where method == nil || entry.method == method {
            events.append((entry.start, 1))
            events.append((entry.start + entry.duration, -1))
        }
        // Ends sort before starts at the same instant: back-to-back requests do not overlap.
        events.sort { $0.time != $1.time ? $0.time < $1.time : $0.change < $1.change }
        var current = 0
        var maximum = 0
        for event in events {
            current += event.change
            maximum = Swift.max(maximum, current)
        }
        return maximum
    }
}
