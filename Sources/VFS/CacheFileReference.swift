import BlockCache
import FuseKit

/// Lends a cached content's file descriptor to a read reply, keeping the content (and so the
/// descriptor) alive until the reply has been sent.
final class CacheFileReference: FileDescriptorOwner {
    let content: CachedContent
    init(_ content: CachedContent) {
        self.content = content
    }
    var fileDescriptor: Int32 { content.fileDescriptor.rawValue }
}
