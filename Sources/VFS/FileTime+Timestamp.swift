import FileProviderKit
import FuseKit

#if canImport(Glibc)
    import Glibc
#endif

extension FileTime {
    /// An item's time as FUSE reports it; both keep nanoseconds, so nothing is rounded.
    init(_ timestamp: Timestamp) {
        self.init(seconds: timestamp.seconds, nanoseconds: timestamp.nanoseconds)
    }
}

extension Timestamp {
    /// A local file's time as `stat` gives it.
    init(_ time: timespec) {
        self.init(seconds: Int64(time.tv_sec), nanoseconds: UInt32(time.tv_nsec))
    }
}
