import Foundation
import Glibc

/// A point in time as POSIX file systems keep it: whole seconds since 1970 and nanoseconds.
///
/// Items carry these instead of `Date` because a `Date` is a Double counted from 2001, which keeps
/// only about a tenth of a microsecond: a modification time of .999999999 would come back as the
/// next whole second, and `ls -l` over the mount would disagree with the remote.
public struct Timestamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Whole seconds since 1970-01-01 00:00:00 UTC (negative before).
    public var seconds: Int64
    /// Nanoseconds past `seconds`, 0 ..< 1,000,000,000.
    public var nanoseconds: UInt32

    /// 1970-01-01 00:00:00 UTC.
    public static let epoch = Timestamp(seconds: 0)

    /// Traps on `nanoseconds` of a second or more: a caller bug.
    public init(seconds: Int64, nanoseconds: UInt32 = 0) {
        precondition(nanoseconds < 1_000_000_000, "nanoseconds must be less than a second")
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// The nearest timestamp at or before `date`, for remotes that report `Date`s.
    public init(_ date: Date) {
        let interval = date.timeIntervalSince1970
        let seconds = interval.rounded(.down)
        let nanoseconds = min(((interval - seconds) * 1e9).rounded(.down), 999_999_999)
        self.init(seconds: Int64(seconds), nanoseconds: UInt32(nanoseconds))
    }

    /// The system's clock now (CLOCK_REALTIME), to the nanosecond.
    public static var now: Timestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Timestamp(seconds: Int64(time.tv_sec), nanoseconds: UInt32(time.tv_nsec))
    }

    /// Nanoseconds since 1970 in one integer, as the metadata store keeps it (good to the year 2262).
    public var nanosecondsSince1970: Int64 { seconds * 1_000_000_000 + Int64(nanoseconds) }

    /// The inverse of `nanosecondsSince1970`.
    public init(nanosecondsSince1970 value: Int64) {
        let (seconds, remainder) = value.quotientAndRemainder(dividingBy: 1_000_000_000)
        self =
            remainder < 0
            ? Timestamp(seconds: seconds - 1, nanoseconds: UInt32(remainder + 1_000_000_000))
            : Timestamp(seconds: seconds, nanoseconds: UInt32(remainder))
    }

    /// The same instant as a `Date`, to a tenth of a microsecond: for display and arithmetic only.
    public var date: Date { Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9) }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }

    public var description: String { "\(seconds).\(String(nanoseconds + 1_000_000_000).dropFirst())" }
}
