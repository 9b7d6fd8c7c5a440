/// A `struct fuse_session *`, wrapped so the session thread, `unmount` and notifications can
/// share it. `FuseSession`'s state lock says when it is valid.
struct SessionPointer: @unchecked Sendable {
    let raw: OpaquePointer
}
