import Glibc

/// A file descriptor that closes itself, so that no path out of a fetch leaks it.
final class OpenFile: Sendable {
    let descriptor: Int32
    /// The absolute path it was opened at, for error messages.
    let path: [UInt8]

    init(path: [UInt8], flags: Int32, mode: mode_t = 0) throws(POSIXFailure) {
        descriptor = try POSIX.open(path, flags: flags, mode: mode)
        self.path = path
    }

    /// Takes ownership of a descriptor opened elsewhere.
    init(descriptor: Int32, path: [UInt8]) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }
}
