import CFuse

/// One kernel request (`fuse_req_t`), wrapped once so it can travel to the task that answers it.
///
/// libfuse lets any thread reply, and the pointer stays valid until exactly one reply has been
/// sent; `Reply` is what enforces the "exactly one".
struct FuseRequest: @unchecked Sendable {
    let raw: OpaquePointer

    init(_ raw: OpaquePointer?) {
        // libfuse never calls an operation without a request.
        self.raw = raw!
    }

    /// The caller's credentials; read before the reply, which frees the request.
    var context: RequestContext {
        let context = fuse_req_ctx(raw).pointee
        return RequestContext(uid: context.uid, gid: context.gid, pid: context.pid)
    }

    /// The request's address: its key among the running tasks.
    var key: UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(raw))) }

    /// The session this request arrived on (its userdata).
    var session: SessionContext { SessionContext.from(fuse_req_userdata(raw)) }
}
