import CFuse
import Dispatch
import Synchronization

/// What every callback of one session needs, handed to libfuse as its userdata.
///
/// The callbacks are plain C functions, so they cannot capture anything: they find the filesystem
/// here. libfuse holds it unretained; the owning `FuseSession` outlives the libfuse session.
final class SessionContext: Sendable {
    let operations: any FileSystemOperations
    /// Requests taken but not yet answered (and forgets not yet handled). The session waits for
    /// zero before `fuse_session_destroy`, which frees the memory every unanswered request points to.
    let inFlight = DispatchGroup()
    /// Replies that read from a file descriptor block on I/O, so they run here, off the
    /// cooperative pool. Concurrent, so a slow disk read does not hold up the others.
    let blockingReplies = DispatchQueue(label: "fpfs.fuse.replies", attributes: .concurrent)
    /// The task answering each request, by the request's address, so that the kernel's INTERRUPT
    /// (the caller got a signal) can cancel it. An entry lives from the callback until just
    /// before the reply, while the address cannot belong to another request.
    let tasks = Mutex<[UInt: Task<Void, Never>]>([:])
    /// The read-ahead the filesystem asked for at INIT, in bytes, when the kernel offered less;
    /// the session raises the mount's read-ahead to it once INIT is answered.
    let wantedReadahead = Mutex<UInt32?>(nil)
    /// The filesystem asked for FUSE passthrough at INIT (`ConnectionSettings.passthrough`).
    let wantsPassthrough = Mutex(false)
    /// The kernel agreed to FUSE passthrough at INIT: backing files can be registered.
    let passthroughNegotiated = Mutex(false)
    /// The kernel agreed at INIT to map handles opened with direct I/O shared.
    let directIOMapsNegotiated = Mutex(false)

    init(operations: any FileSystemOperations) {
        self.operations = operations
    }

    static func from(_ userdata: UnsafeMutableRawPointer?) -> SessionContext {
        Unmanaged<SessionContext>.fromOpaque(userdata!).takeUnretainedValue()
    }
}
