/// A range of a cached content that one fetch has undertaken to bring. Readers of bytes inside it
/// wait for that fetch instead of starting another; when it ends, `CachedContent.finish` tells them
/// how it went.
public struct ContentClaim: Hashable, Sendable {
    public let id: UInt64
    public let range: Range<UInt64>
}
