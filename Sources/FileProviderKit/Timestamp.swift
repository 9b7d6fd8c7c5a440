import Foundation
import Glibc

/// A point in time as POSIX file systems keep it: whole seconds since 1970 and nanoseconds.
///
/// Items carry these instead of `Date` because a `Date` is a Double counted from 2001, which keeps
/// only about a tenth of a microsecond: a modification time of .999999999 would come back as the
/// next whole second, and `ls -l` over the mount would disagree with the remote.
///
/// Every timestamp lies in `earliest ... latest`, the instants the metadata store can hold as
/// nanoseconds since 1970 in an Int64 (1677-09-21 to 2262-04-11): a remote's date outside them
/// (`touch -d 2300-01-01`, a server's year 9999) is clamped to the nearer end when it is made,
/// so no conversion further on can overflow (DECISIONS 180).
public struct Timestamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Whole seconds since 1970-01-01 00:00:00 UTC (negative before).
    public var seconds: Int64
    /// Nanoseconds past `seconds`, 0 ..< 1,000,000,000.
    public var nanoseconds: UInt32

    /// 1970-01-01 00:00:00 UTC.
    public static let epoch = Timestamp(seconds: 0)

    /// 1677-09-21 00:12:43.145224192 UTC, the earliest instant the store holds.
    public static let earliest = Timestamp(exactly: Int64.min)
    /// 2262-04-11 23:47:16.854775807 UTC, the latest instant the store holds.
    public static let latest = Timestamp(exactly: Int64.max)

    /// The instant, clamped to `earliest ... latest`. Traps on `nanoseconds` of a second or more:
    /// a caller bug.
    public init(seconds: Int64, nanoseconds: UInt32 = 0) {
        precondition(nanoseconds < 1_000_000_000, "nanoseconds must be less than a second")
        self.seconds = seconds
        self.nanoseconds = nanoseconds
        if self < Self.earliest {
            self = Self.earliest
        } else if self > Self.latest {
            self = Self.latest
        }
    }

    /// The nearest timestamp at or before `date`, for remotes that report `Date`s; clamped as
    /// `init(seconds:nanoseconds:)` (a `Date` of ±infinity or NaN is far beyond either end).
    public init(_ date: Date) {
        let interval = date.timeIntervalSince1970
        guard interval.isFinite else {
            self = interval > 0 ? Self.latest : Self.earliest
            return
        }
        // Whole seconds beyond the store's range convert to an Int64 only once clamped.
        let seconds = Swift.min(Swift.max(interval.rounded(.down), -1e11), 1e11)
        let nanoseconds = min(((interval - seconds) * 1e9).rounded(.down), 999_999_999)
        self.init(seconds: Int64(seconds), nanoseconds: UInt32(Swift.max(nanoseconds, 0)))
    }

    /// The system's clock now (CLOCK_REALTIME), to the nanosecond.
    public static var now: Timestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Timestamp(seconds: Int64(time.tv_sec), nanoseconds: UInt32(time.tv_nsec))
    }

    /// Nanoseconds since 1970 in one integer, as the metadata store keeps it (good to the year 2262).
    public var nanosecondsSince1970: Int64 { seconds * 1_000_000_000 + Int64(nanoseconds) }

    /// The inverse of `nanosecondsSince1970`; every Int64 is an instant in range.
    public init(nanosecondsSince1970 value: Int64) {
        self.init(exactly: value)
    }

    /// `nanosecondsSince1970` read back, without the clamp (the bounds are made from this).
    private init(exactly value: Int64) {
        let (seconds, remainder) = value.quotientAndRemainder(dividingBy: 1_000_000_000)
        if remainder < 0 {
            self.seconds = seconds - 1
            self.nanoseconds = UInt32(remainder + 1_000_000_000)
        } else {
            self.seconds = seconds
            self.nanoseconds = UInt32(remainder)
        }
    }

    /// The same instant as a `Date`, to a tenth of a microsecond: for display and arithmetic only.
    public var date: Date { Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9) }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }

    private enum CodingKeys: CodingKey { case seconds, nanoseconds }

    /// Decodes through the clamp; nanoseconds of a second or more are data corruption, not a trap.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let nanoseconds = try container.decode(UInt32.self, forKey: .nanoseconds)
        guard nanoseconds < 1_000_000_000 else {
            throw DecodingError.dataCorruptedError(
                forKey: .nanoseconds, in: container, debugDescription: "nanoseconds must be less than a second")
        }
        self.init(seconds: try container.decode(Int64.self, forKey: .seconds), nanoseconds: nanoseconds)
    }

    public var description: String { "\(seconds).\(String(nanoseconds + 1_000_000_000).dropFirst())" }
}
