import Foundation
import FuseKit

/// A file on local disk whose descriptor stays open while anything references it, as the block
/// cache's files will: what `ReadReply.fileRange` splices from.
final class TestFile: FileDescriptorOwner {
    let fileDescriptor: Int32

    init(path: String, contents: [UInt8]) throws {
        try Data(contents).write(to: URL(fileURLWithPath: path))
        // Close-on-exec: the mount tests spawn fpfs daemons from this same process, and a
        // descriptor they inherited would show in them as a deleted file held open.
        fileDescriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard fileDescriptor >= 0 else { throw CocoaError(.fileReadUnknown) }
    }

    deinit {
        close(fileDescriptor)
    }
}
