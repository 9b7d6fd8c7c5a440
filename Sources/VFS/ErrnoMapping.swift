import FileProviderKit
import Logging
import MetadataStore
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// The one place where errors become errno (ARCHITECTURE §6). Anything unexpected is EIO and logged,
/// with what it was about (`subject`: the operation and the item's path) when the caller knows it;
/// the subject is asked for only then, since finding a path reads the store (DECISIONS 242).
enum ErrnoMapping {
    static func errno(for error: any Error, about subject: () async -> String? = { nil }, logger: Logger) async
        -> Errno
    {
        let (errno, unexpected) = mapped(error)
        if let unexpected {
            let about = await subject().map { "\($0): " } ?? ""
            logger.error("\(about)\(unexpected) mapped to EIO: \(error)")
        }
        return errno
    }

    /// The errno of `error`, and for one mapped to EIO, what kind of error it was, for the log.
    private static func mapped(_ error: any Error) -> (Errno, unexpected: String?) {
        switch error {
        case let error as Errno:
            return (error, nil)
        case let error as ProviderError:
            switch error {
            case .noSuchItem: return (.noSuchFileOrDirectory, nil)
            case .serverUnreachable: return (.hostIsDown, nil)
            case .notAuthenticated: return (.permissionDenied, nil)
            case .insufficientQuota: return (.diskQuotaExceeded, nil)
            case .filenameCollision: return (.fileExists, nil)
            case .directoryNotEmpty: return (.directoryNotEmpty, nil)
            case .deletionRejected: return (.notPermitted, nil)
            case .featureUnsupported: return (.notSupported, nil)
            case .versionNoLongerAvailable: return (.staleNFSFileHandle, nil)
            case .cannotSynchronize, .excludedFromSync, .pageExpired, .syncAnchorExpired, .conflict:
                return (.ioError, "provider error")
            }
        case is RemoteTimeout:
            return (.hostIsDown, nil)
        case is StoreDiskFull:
            return (.noSpace, nil)
        case is CancellationError:
            return (.interrupted, nil)
        default:
            return (.ioError, "unexpected error")
        }
    }

    /// ENODATA: "no such attribute" (swift-system names it differently per platform).
    static let noAttribute = Errno(rawValue: ENODATA)
    /// EOPNOTSUPP: an attribute namespace this filesystem does not keep.
    static let notSupported = Errno(rawValue: EOPNOTSUPP)
}
