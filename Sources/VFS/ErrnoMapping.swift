import FileProviderKit
import Logging
import MetadataStore
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// The one place where errors become errno (ARCHITECTURE §6). Anything unexpected is EIO and logged,
/// with what it was about (`subject`: the operation and the item's name) when the caller knows it.
enum ErrnoMapping {
    static func errno(for error: any Error, about subject: String? = nil, logger: Logger) -> Errno {
        let about = subject.map { "\($0): " } ?? ""
        switch error {
        case let error as Errno:
            return error
        case let error as ProviderError:
            switch error {
            case .noSuchItem: return .noSuchFileOrDirectory
            case .serverUnreachable: return .hostIsDown
            case .notAuthenticated: return .permissionDenied
            case .insufficientQuota: return .diskQuotaExceeded
            case .filenameCollision: return .fileExists
            case .directoryNotEmpty: return .directoryNotEmpty
            case .deletionRejected: return .notPermitted
            case .featureUnsupported: return .notSupported
            case .versionNoLongerAvailable: return .staleNFSFileHandle
            case .cannotSynchronize, .excludedFromSync, .pageExpired, .syncAnchorExpired, .conflict:
                logger.error("\(about)provider error mapped to EIO: \(error)")
                return .ioError
            }
        case is RemoteTimeout:
            return .hostIsDown
        case is StoreDiskFull:
            return .noSpace
        case is CancellationError:
            return .interrupted
        default:
            logger.error("\(about)unexpected error mapped to EIO: \(error)")
            return .ioError
        }
    }

    /// ENODATA: "no such attribute" (swift-system names it differently per platform).
    static let noAttribute = Errno(rawValue: ENODATA)
    /// EOPNOTSUPP: an attribute namespace this filesystem does not keep.
    static let notSupported = Errno(rawValue: EOPNOTSUPP)
}
