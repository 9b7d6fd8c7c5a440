import CFuse
import Glibc

/// Answers the kernel's INIT through libfuse, and asks for FUSE passthrough and shared maps of
/// direct-I/O handles on the way.
///
/// libfuse 3.14 (Debian 12) predates both and cannot ask for them. So for this one request
/// the session's descriptor is pointed at a pipe: libfuse writes its INIT reply there, the reply
/// gets the flags (and a backing-file stack depth), and is then written to /dev/fuse.
/// Nothing else is answered before INIT, so no other reply can end up in the pipe; a notification
/// sent meanwhile would (the kernel ignores those before INIT anyway): the reply is the message
/// that names the request, and anything else is dropped.
enum PassthroughNegotiation {
    private static let initOpcode: UInt32 = 26
    /// fuse_in_header and fuse_out_header.
    private static let requestHeaderSize = 40
    private static let replyHeaderSize = 16
    /// FUSE_WRITEBACK_CACHE: the kernel refuses passthrough alongside it.
    private static let writebackCache: UInt32 = 1 << 16
    /// How deep the backing files' filesystems may stack: 1 lets them live on any filesystem but
    /// an overlay or another FUSE mount, and keeps this mount usable as an overlay's lower layer.
    private static let maxStackDepth: UInt32 = 1

    /// What the kernel agreed to at INIT beyond what libfuse asked for.
    struct Agreement {
        /// FUSE passthrough: backing files can be registered.
        var passthrough = false
        /// FUSE_DIRECT_IO_ALLOW_MMAP: a handle opened with direct I/O can be mapped shared.
        var directIOMaps = false
    }

    /// Processes `buffer` (the session's first request) with libfuse. When it is an INIT that
    /// offers passthrough, asks for it if `wantsPassthrough()` (read after libfuse has asked the
    /// filesystem), and for shared maps of direct-I/O handles when offered too.
    static func answerInit(_ session: OpaquePointer, _ buffer: inout fuse_buf, wantsPassthrough: () -> Bool)
        -> Agreement
    {
        guard let offered = flags2OfferingPassthrough(buffer), let memory = buffer.mem,
            let captured = capturingReply(
                session, to: memory.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                { fuse_session_process_buf(session, &buffer) })
        else {
            fuse_session_process_buf(session, &buffer)
            return Agreement()
        }
        var reply = captured
        var wanted = offered & CFUSE_DIRECT_IO_ALLOW_MMAP_FLAGS2_BIT
        if wantsPassthrough() { wanted |= CFUSE_PASSTHROUGH_FLAGS2_BIT }
        let agreed = ask(for: wanted, in: &reply)
        let device = fuse_session_fd(session)
        let written = reply.withUnsafeBytes { write(device, $0.baseAddress, $0.count) }
        guard written == reply.count else { return Agreement() }
        return Agreement(
            passthrough: agreed & CFUSE_PASSTHROUGH_FLAGS2_BIT != 0,
            directIOMaps: agreed & CFUSE_DIRECT_IO_ALLOW_MMAP_FLAGS2_BIT != 0)
    }

    /// The flags2 of `buffer` when it is an INIT whose flags offer FUSE_PASSTHROUGH.
    private static func flags2OfferingPassthrough(_ buffer: fuse_buf) -> UInt32? {
        guard buffer.flags.rawValue & FUSE_BUF_IS_FD.rawValue == 0, let memory = buffer.mem,
            buffer.size >= requestHeaderSize + MemoryLayout<cfuse_init_in>.size
        else { return nil }
        let opcode = memory.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
        let request = memory.loadUnaligned(fromByteOffset: requestHeaderSize, as: cfuse_init_in.self)
        guard opcode == initOpcode, request.flags & CFUSE_INIT_EXT != 0,
            request.flags2 & CFUSE_PASSTHROUGH_FLAGS2_BIT != 0
        else { return nil }
        return request.flags2
    }

    /// Runs `process` with the session's descriptor pointing at a pipe; returns the reply it
    /// wrote to the request numbered `unique`, or nil (having run nothing) when the descriptors
    /// could not be set up.
    private static func capturingReply(_ session: OpaquePointer, to unique: UInt64, _ process: () -> Void)
        -> [UInt8]?
    {
        let device = fuse_session_fd(session)
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        defer { close(ends[0]) }
        let saved = dup(device)
        guard saved >= 0, dup2(ends[1], device) == device else {
            if saved >= 0 { close(saved) }
            close(ends[1])
            return nil
        }
        process()
        dup2(saved, device)
        close(saved)
        close(ends[1])
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        return message(to: unique, in: bytes)
    }

    /// The message in `bytes` (whole messages, each led by its length) whose header names the
    /// request `unique`; all of `bytes` when none does, so that the kernel gets what libfuse sent.
    private static func message(to unique: UInt64, in bytes: [UInt8]) -> [UInt8] {
        var start = 0
        while bytes.count - start >= replyHeaderSize {
            let (length, named) = bytes.withUnsafeBytes {
                (
                    Int($0.loadUnaligned(fromByteOffset: start, as: UInt32.self)),
                    $0.loadUnaligned(fromByteOffset: start + 8, as: UInt64.self)
                )
            }
            guard length >= replyHeaderSize, start + length <= bytes.count else { break }
            if named == unique { return Array(bytes[start..<start + length]) }
            start += length
        }
        return bytes
    }

    /// Sets the flags2 bits `wanted` in a successful INIT reply (with the stack depth for
    /// passthrough); returns those set: none when the reply is an error or not the size this code
    /// knows, and no passthrough when it enables the writeback cache.
    private static func ask(for wanted: UInt32, in reply: inout [UInt8]) -> UInt32 {
        guard reply.count == replyHeaderSize + MemoryLayout<cfuse_init_out>.size else { return 0 }
        return reply.withUnsafeMutableBytes { bytes in
            let error = bytes.loadUnaligned(fromByteOffset: 4, as: Int32.self)
            var answer = bytes.loadUnaligned(fromByteOffset: replyHeaderSize, as: cfuse_init_out.self)
            guard error == 0, answer.flags & CFUSE_INIT_EXT != 0 else { return 0 }
            var granted = wanted
            if answer.flags & writebackCache != 0 { granted &= ~CFUSE_PASSTHROUGH_FLAGS2_BIT }
            answer.flags2 |= granted
            if granted & CFUSE_PASSTHROUGH_FLAGS2_BIT != 0 { answer.max_stack_depth = maxStackDepth }
            bytes.storeBytes(of: answer, toByteOffset: replyHeaderSize, as: cfuse_init_out.self)
            return granted
        }
    }
}
