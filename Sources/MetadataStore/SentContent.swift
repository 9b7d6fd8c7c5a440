import Foundation

/// Bytes an upload sent whose answer never came (a kill -9, an outage): their length and SHA-256.
/// The remote may hold them, and a retry that finds them there knows them for its own, not
/// another's edit (DECISIONS 307).
public struct SentContent: Sendable, Hashable {
    public var size: UInt64
    public var sha256: Data

    public init(size: UInt64, sha256: Data) {
        self.size = size
        self.sha256 = sha256
    }
}
