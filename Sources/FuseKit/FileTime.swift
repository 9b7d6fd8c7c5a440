/// A file time as `struct stat` and setattr carry it: seconds since 1970 and nanoseconds.
///
/// Kept exact (not a `Date`, whose Double rounds .999999999 up into the next second) so that a
/// time reaches `stat` and comes back from `touch -d` to the nanosecond.
public struct FileTime: Sendable, Hashable {
    public var seconds: Int64
    /// 0 ..< 1,000,000,000.
    public var nanoseconds: UInt32

    public init(seconds: Int64, nanoseconds: UInt32 = 0) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }
}

/// A time that setattr sets: the one given (`touch -d`), or the file system's clock now (`touch`),
/// which FUSE leaves to the file system to read.
public enum TimeChange: Sendable, Hashable {
    case now
    case time(FileTime)
}
