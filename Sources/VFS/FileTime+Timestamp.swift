import FileProviderKit
import FuseKit

extension FileTime {
    /// An item's time as FUSE reports it; both keep nanoseconds, so nothing is rounded.
    init(_ timestamp: Timestamp) {
        self.init(seconds: timestamp.seconds, nanoseconds: timestamp.nanoseconds)
    }
}
