import BlockCache
import FuseKit

/// Lends a cached content's file descriptor to a read reply, keeping the content (and so the
/// descriptor) alive until the reply has been sent. Unless the handle bypasses the page cache,
/// the bytes sent are then in the mount's page cache, and the content may give back its own
/// pages of them.
final class CacheFileReference: FileDescriptorOwner {
    let content: CachedContent
    let kernelKeepsCopy: Bool
    init(_ content: CachedContent, kernelKeepsCopy: Bool) {
        self.content = content
        self.kernelKeepsCopy = kernelKeepsCopy
    }
    var fileDescriptor: Int32 { content.fileDescriptor.rawValue }

    func handedToKernel(offset: UInt64, length: Int) {
        guard kernelKeepsCopy else { return }
        content.noteKernelCopy(offset..<offset + UInt64(length))
    }
}
