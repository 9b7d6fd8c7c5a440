import CFuse
import Foundation
import Synchronization
import SystemPackage

/// One FUSE mount served by a `FileSystemOperations`.
///
/// `mount()` creates the libfuse session and mounts it; `run()` serves requests on a dedicated
/// thread (never a cooperative one: reading /dev/fuse blocks) and returns when the session ends —
/// on `fusermount3 -u`, SIGINT, SIGTERM or SIGHUP, or `unmount()`. It then waits for every request
/// already taken to be answered, unmounts, destroys the libfuse session and calls the
/// filesystem's `shutdown()`.
///
/// The loop is `fuse_session_loop` with one difference: it polls /dev/fuse beside an eventfd
/// (`SessionWake`) that `unmount()` and the exit signals write to. `fuse_session_exit` only sets a
/// flag, and a signal delivered to another thread does not interrupt the blocking read, so the
/// plain loop would only notice the next request.
///
/// Signal handlers are process-wide: run one session per process if it should end on signals.
public final class FuseSession: Sendable {
    /// How long the loop waits for a request before looking at the exit flag again, when it has
    /// no `SessionWake` (no eventfd could be made).
    private static let exitCheckMilliseconds: Int32 = 100

    /// Wakes the request loop for the session's end (nil only if no eventfd could be made).
    private let wake = SessionWake()

    /// The largest read request. Replies from a file are spliced through a pipe, and libfuse
    /// splices only what fits one (header pages included); an unprivileged process cannot grow a
    /// pipe past /proc/sys/fs/pipe-max-size (1 MiB), and a bigger read falls back to a buffer
    /// allocated, filled and copied for every reply.
    static let maximumRead = 512 << 10

    public let mountpoint: String
    private let resolvedMountpoint: String
    /// The `-o` option string given to libfuse.
    public let options: String
    private let context: SessionContext
    /// Guards the libfuse session pointer's lifetime: only `.mounted` and `.running` hold a valid
    /// one.
    private let state = Mutex(State.created)
    /// Calls of `withLiveSession` under way; the session is destroyed only once they are over.
    /// They are counted rather than run under `state`'s lock: a notification can block in the
    /// kernel until a request that holds a directory's lock is answered, and that request may
    /// itself need the session (a create registering its backing file).
    private let users = Atomic(0)

    private enum State {
        case created
        case mounted(SessionPointer)
        /// `unmount()` came before `run()`; `run()` still owes the filesystem its `shutdown()`.
        case unmountedBeforeRun
        case running(SessionPointer)
        case ended
    }

    /// - Parameters:
    ///   - fsname: The source `/proc/mounts` shows, e.g. "fpfs:/srv/data".
    ///   - subtype: The type shows as `fuse.<subtype>`.
    ///   - allowOther: Let users other than the mounter use the mount.
    ///   - options: Further mount options, passed to libfuse as given (e.g. "ro", "noatime").
    public init(
        operations: any FileSystemOperations, mountpoint: String, fsname: String, subtype: String = "fpfs",
        allowOther: Bool = false, options: [String] = []
    ) {
        self.mountpoint = mountpoint
        // As /proc/self/mountinfo will show it; resolved now, while no request can be involved.
        self.resolvedMountpoint =
            realpath(mountpoint, nil).map { resolved in
                defer { free(resolved) }
                return String(cString: resolved)
            } ?? mountpoint
        self.context = SessionContext(operations: operations)
        // libfuse splits -o at commas; a backslash keeps one in a value.
        func escaped(_ value: String) -> String {
            value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: ",", with: "\\,")
        }
        var all = [
            "fsname=\(escaped(fsname))", "subtype=\(escaped(subtype))", "max_read=\(Self.maximumRead)",
        ]
        if allowOther { all.append("allow_other") }
        all += options
        self.options = all.joined(separator: ",")
    }

    /// A session mounted but never run would otherwise stay mounted with nobody answering.
    /// (A running session cannot get here: its thread holds it.)
    deinit {
        unmount()
    }

    /// Creates the libfuse session and mounts it. Requests wait in the kernel until `run()`.
    public func mount() throws(FuseError) {
        try state.withLock { state throws(FuseError) in
            guard case .created = state else { throw .alreadyMounted }
            var arguments = fuse_args()
            defer { fuse_opt_free_args(&arguments) }
            for argument in ["fpfs", "-o", options] {
                fuse_opt_add_arg(&arguments, argument)
            }
            var operations = makeLowLevelOperations()
            // The session does not retain its userdata; `self.context` outlives the session.
            let userdata = Unmanaged.passUnretained(context).toOpaque()
            guard
                let session = cfuse_session_new(
                    &arguments, &operations, MemoryLayout<fuse_lowlevel_ops>.size, userdata)
            else { throw .sessionCreationFailed(options: options) }
            guard fuse_session_mount(session, mountpoint) == 0 else {
                let error = Errno(rawValue: errno)
                fuse_session_destroy(session)
                throw .mountFailed(mountpoint: mountpoint, error)
            }
            state = .mounted(SessionPointer(raw: session))
        }
    }

    /// Serves requests until the session ends, then unmounts and shuts the filesystem down.
    /// Returns at once (after `shutdown()`) if `unmount()` came first. Throws `.notMounted`
    /// unless `mount()` succeeded and `run()` was not called before.
    public func run() async throws(FuseError) {
        let session = try state.withLock { state throws(FuseError) -> SessionPointer? in
            switch state {
            case .mounted(let session):
                state = .running(session)
                return session
            case .unmountedBeforeRun:
                state = .ended
                return nil
            case .created, .running, .ended:
                throw .notMounted
            }
        }
        guard let session else {
            await context.operations.shutdown()
            return
        }
        let status = await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: self.serve(session)) }
            thread.name = "fpfs-fuse"
            thread.start()
        }
        // Here rather than in libfuse's destroy callback: that one is skipped when the session
        // ends before the kernel's INIT arrives, and it could only wait for an async shutdown by
        // blocking.
        await context.operations.shutdown()
        if status < 0 { throw .sessionFailed(Errno(rawValue: -status)) }
    }

    /// Ends the session from the program: `run()` returns within a moment, after unmounting.
    /// A session not yet running is unmounted at once. Safe to call more than once.
    public func unmount() {
        let retired = state.withLock { state -> SessionPointer? in
            switch state {
            case .created, .unmountedBeforeRun, .ended:
                return nil
            case .mounted(let session):
                state = .unmountedBeforeRun
                return session
            case .running(let session):
                fuse_session_exit(session.raw)
                return nil
            }
        }
        wake?.wake()
        guard let retired else { return }
        waitForUsers()
        fuse_session_unmount(retired.raw)
        fuse_session_destroy(retired.raw)
    }

    /// Sends cache invalidations to the kernel for this session.
    public var notifier: FuseNotifier { FuseNotifier(session: self) }

    /// Registers backing files for FUSE passthrough with this session.
    public var backingFiles: BackingFiles { BackingFiles(session: self) }

    /// True once the kernel agreed to FUSE passthrough at INIT.
    var passthroughNegotiated: Bool { context.passthroughNegotiated.withLock { $0 } }
    var directIOMapsNegotiated: Bool { context.directIOMapsNegotiated.withLock { $0 } }

    /// Runs `body` with the libfuse session if it is still alive; nil once it has ended.
    func withLiveSession(_ body: (OpaquePointer) -> Int32) -> Int32? {
        let live = state.withLock { state -> SessionPointer? in
            switch state {
            case .mounted(let session), .running(let session):
                users.add(1, ordering: .sequentiallyConsistent)
                return session
            case .created, .unmountedBeforeRun, .ended:
                return nil
            }
        }
        guard let live else { return nil }
        defer { users.subtract(1, ordering: .sequentiallyConsistent) }
        return body(live.raw)
    }

    /// Waits until no `withLiveSession` call is under way; called once the state says the session
    /// is gone, so that none can begin.
    private func waitForUsers() {
        while users.load(ordering: .sequentiallyConsistent) > 0 { usleep(1000) }
    }

    /// The session thread: the request loop, then the teardown. Returns 0 or -errno.
    private func serve(_ session: SessionPointer) -> Int32 {
        let exitSignals = SessionWake.defaultExitSignals()
        let handlesSignals = fuse_set_signal_handlers(session.raw) == 0
        if handlesSignals { wake?.catchExitSignals(exitSignals) }
        let status = Self.loop(session.raw, context: context, wake: wake) { raiseReadahead() }
        // Replies sent from now on fail quietly instead of being reported as write errors.
        fuse_session_exit(session.raw)
        if handlesSignals {
            wake?.releaseExitSignals(exitSignals)
            fuse_remove_signal_handlers(session.raw)
        }
        // Requests already taken still get their answers while the mount can deliver them.
        context.inFlight.wait()
        state.withLock { $0 = .ended }
        waitForUsers()
        fuse_session_unmount(session.raw)
        fuse_session_destroy(session.raw)
        return status
    }

    /// `fuse_session_loop`, polling /dev/fuse beside `wake`, so that the end is seen without a
    /// request arriving (without `wake`, by looking at the exit flag every 100 ms). The first
    /// request (the kernel's INIT) may ask for passthrough on the way (`PassthroughNegotiation`);
    /// `initialized` runs once it has been answered.
    private static func loop(
        _ session: OpaquePointer, context: SessionContext, wake: SessionWake?, initialized: () -> Void
    ) -> Int32 {
        var buffer = fuse_buf()
        defer { free(buffer.mem) }
        var polled = [
            pollfd(fd: fuse_session_fd(session), events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake?.descriptor ?? -1, events: Int16(POLLIN), revents: 0),
        ]
        let timeout = wake == nil ? exitCheckMilliseconds : -1
        var answeredInit = false
        while fuse_session_exited(session) == 0 {
            let ready = poll(&polled, nfds_t(polled.count), timeout)
            if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            if ready < 0 { return -errno }
            // A signal's wake: end as libfuse's handler would have (`unmount()` set the flag).
            if polled[1].revents != 0 {
                fuse_session_exit(session)
                continue
            }
            let received = fuse_session_receive_buf(session, &buffer)
            if received == -EINTR { continue }
            // 0: unmounted (libfuse turns ENODEV into a clean end).
            if received <= 0 { return received }
            if answeredInit {
                fuse_session_process_buf(session, &buffer)
                continue
            }
            answeredInit = true
            let agreement = PassthroughNegotiation.answerInit(session, &buffer) {
                context.wantsPassthrough.withLock { $0 }
            }
            context.passthroughNegotiated.withLock { $0 = agreement.passthrough }
            context.directIOMapsNegotiated.withLock { $0 = agreement.directIOMaps }
            initialized()
        }
        return 0
    }

    /// Sets the mount's read-ahead (its backing device's `read_ahead_kb` in sysfs) to what the
    /// filesystem asked for at INIT: the kernel offers FUSE only its 128 KiB default there, which
    /// cuts sequential reads into 128 KiB requests and the page cache into small pages. Needs
    /// root; otherwise the default stays (slower, still correct). The device number comes from
    /// /proc/self/mountinfo: a stat of the mountpoint would be a request to this very loop.
    private func raiseReadahead() {
        guard let wanted = context.wantedReadahead.withLock({ $0 }),
            let mounts = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        else { return }
        // Fields: id, parent id, major:minor, root, mountpoint (spaces and the like as \ooo), ...
        let device = mounts.split(separator: "\n").map { $0.split(separator: " ") }.last {
            $0.count > 4 && MountTableField.unescaped($0[4]) == resolvedMountpoint
        }?[2]
        guard let device else { return }
        let fd = open("/sys/class/bdi/\(device)/read_ahead_kb", O_WRONLY)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let text = Array("\(wanted / 1024)\n".utf8)
        _ = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
