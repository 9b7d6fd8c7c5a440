import FileProviderKit
import Glibc

/// A failed system call, with what was attempted on which path, so that the error a provider
/// caller finally sees can name both. Translated to `ProviderError` at the provider's boundary.
struct POSIXFailure: Error, CustomStringConvertible {
    let code: Int32
    let operation: String
    let path: [UInt8]

    /// Captures the current `errno`.
    init(_ operation: String, _ path: [UInt8], code: Int32 = errno) {
        self.code = code
        self.operation = operation
        self.path = path
    }

    var description: String {
        "\(operation) \(String(decoding: path, as: UTF8.self)): \(String(cString: strerror(code)))"
    }

    /// True for errors a vanished or disconnected root folder typically produces; the provider then
    /// checks whether the root is still the folder it was opened on.
    var mayMeanRootVanished: Bool {
        [ENOENT, ENOTDIR, EIO, ESTALE, ENOTCONN, ENODEV, ENXIO].contains(code)
    }

    /// The contract's error for this errno. Deletions refine access errors to `deletionRejected`.
    var providerError: ProviderError {
        switch code {
        case ENOENT, ENOTDIR: .noSuchItem(nil)
        case EACCES, EPERM, EROFS: .notAuthenticated(reason: description)
        case ENOSPC, EDQUOT: .insufficientQuota
        case EEXIST: .filenameCollision(existing: nil)
        case ENOTEMPTY: .directoryNotEmpty
        case ENOTCONN, ESTALE, ETIMEDOUT, EHOSTDOWN, EHOSTUNREACH, ENETDOWN, ENETUNREACH, ENODEV, ENXIO,
            ECONNABORTED, ECONNRESET, ECONNREFUSED:
            .serverUnreachable(reason: description)
        default: .cannotSynchronize(reason: description)
        }
    }
}
