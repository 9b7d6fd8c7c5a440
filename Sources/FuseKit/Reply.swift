import CFuse
import SystemPackage

/// The one answer a request gets.
///
/// Every consuming method sends a reply, so a request can be answered at most once; a `Reply`
/// dropped without one answers EIO from `deinit`, so a request is answered at least once and a
/// caller in the kernel never hangs on a forgotten request. Sending also ends the request's
/// in-flight count, which the session waits on before it frees its memory.
struct Reply: ~Copyable {
    private let request: FuseRequest

    init(_ request: FuseRequest) {
        self.request = request
    }

    deinit {
        let session = request.session
        fuse_reply_err(request.raw, EIO)
        session.inFlight.leave()
    }

    /// Sends one reply with `body` and ends the request.
    private consuming func send(_ body: (OpaquePointer) -> Int32) {
        let request = self.request
        discard self
        let session = request.session
        // A failed reply (the kernel already gave up on an interrupted request, or the session
        // is gone) needs no answer: there is nobody left to answer.
        _ = body(request.raw)
        session.inFlight.leave()
    }

    /// Answers a thrown error: an `Errno` as itself, a cancellation as EINTR, anything else EIO.
    consuming func fail(_ error: any Error) {
        let code: Int32 =
            switch error {
            case let errno as Errno: errno.rawValue
            case is CancellationError: EINTR
            default: EIO
            }
        send { fuse_reply_err($0, code) }
    }

    /// Success without data.
    consuming func ok() {
        send { fuse_reply_err($0, 0) }
    }

    consuming func entry(_ entry: Entry) {
        var parameters = entry.parameters
        send { fuse_reply_entry($0, &parameters) }
    }

    /// A new file's handle passes through when `open.backing` names a backing file (its writes
    /// and reads go to that file); direct I/O with a backing file is never asked for here.
    consuming func create(_ entry: Entry, _ open: OpenReply) {
        var parameters = entry.parameters
        var info = open.fileInfo
        if let backing = open.backing {
            send { cfuse_reply_create_passthrough($0, &parameters, &info, backing.rawValue) }
        } else {
            send { fuse_reply_create($0, &parameters, &info) }
        }
    }

    consuming func attributes(_ reply: AttributesReply) {
        var stat = reply.attributes.stat
        send { fuse_reply_attr($0, &stat, reply.timeout.fuseSeconds) }
    }

    consuming func readlink(_ target: [UInt8]) {
        let terminated = target + [0]
        send { request in
            terminated.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { fuse_reply_readlink(request, $0.baseAddress) }
            }
        }
    }

    consuming func open(_ reply: OpenReply) {
        var info = reply.fileInfo
        if let backing = reply.backing {
            send { cfuse_reply_open_passthrough($0, &info, backing.rawValue, reply.directIO ? 1 : 0) }
        } else {
            send { fuse_reply_open($0, &info) }
        }
    }

    consuming func written(_ count: Int) {
        send { fuse_reply_write($0, count) }
    }

    consuming func bytes(_ bytes: [UInt8]) {
        send { request in bytes.withUnsafeBytes { fuse_reply_buf(request, $0.baseAddress, $0.count) } }
    }

    consuming func statfs(_ statistics: FileSystemStatistics) {
        var statvfs = statistics.statvfs
        send { fuse_reply_statfs($0, &statvfs) }
    }

    /// Answers getxattr/listxattr: the length for a size probe (`size` 0), ERANGE when the value
    /// does not fit, the value otherwise.
    consuming func xattr(_ value: [UInt8], size: Int) {
        if size == 0 {
            send { fuse_reply_xattr($0, value.count) }
        } else if value.count > size {
            send { fuse_reply_err($0, ERANGE) }
        } else {
            bytes(value)
        }
    }

    /// Answers read. File-backed data is sent from `blockingReplies`, because libfuse reads or
    /// splices from the descriptor inside the reply call; the owner stays referenced until then.
    consuming func read(_ reply: ReadReply) {
        switch reply {
        case .bytes(let bytes):
            self.bytes(bytes)
        case .fileRange(let file, let offset, let length):
            let request = self.request
            discard self
            let session = request.session
            session.blockingReplies.async {
                withExtendedLifetime(file) {
                    var vector = cfuse_bufvec_fd(file.fileDescriptor, off_t(offset), length)
                    _ = fuse_reply_data(request.raw, &vector, FUSE_BUF_SPLICE_MOVE)
                }
                session.inFlight.leave()
            }
        }
    }

    /// Answers readdir/readdirplus with the accepted entries of `buffer`, in the kernel's format.
    consuming func directory(_ buffer: DirectoryBuffer) {
        send { request in
            var output = [CChar](repeating: 0, count: buffer.capacity)
            let used = output.withUnsafeMutableBufferPointer { output in
                var used = 0
                for item in buffer.items {
                    let remaining = output.count - used
                    let size = (item.name + [0]).withUnsafeBufferPointer { name in
                        name.withMemoryRebound(to: CChar.self) { name in
                            Reply.addDirectoryEntry(
                                request, item, name: name.baseAddress!, isPlus: buffer.isPlus,
                                into: output.baseAddress! + used, remaining: remaining)
                        }
                    }
                    // libfuse writes nothing when an entry does not fit; DirectoryBuffer's size
                    // accounting (tested against libfuse) makes that impossible.
                    guard size <= remaining else {
                        assertionFailure("DirectoryBuffer.entrySize disagrees with libfuse")
                        break
                    }
                    used += size
                }
                return used
            }
            return fuse_reply_buf(request, output, used)
        }
    }

    private static func addDirectoryEntry(
        _ request: OpaquePointer, _ item: DirectoryBuffer.Item, name: UnsafePointer<CChar>, isPlus: Bool,
        into output: UnsafeMutablePointer<CChar>, remaining: Int
    ) -> Int {
        let offset = off_t(Int64(bitPattern: item.nextOffset))
        if isPlus {
            var parameters = item.entry.parameters
            return fuse_add_direntry_plus(request, output, remaining, name, &parameters, offset)
        }
        // Plain readdir carries only the inode and the type.
        var typeAndInode = stat()
        typeAndInode.st_ino = UInt(item.entry.inode.rawValue)
        typeAndInode.st_mode = item.entry.attributes?.type.rawValue ?? 0
        return fuse_add_direntry(request, output, remaining, name, &typeAndInode, offset)
    }
}
