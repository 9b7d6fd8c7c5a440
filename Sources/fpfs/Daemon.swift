import BlockCache
import FileProviderKit
import Foundation
import FuseKit
import Logging
import MetadataStore
import ProviderTesting
import Synchronization
import SystemPackage
import VFS

#if canImport(Glibc)
    import Glibc
#endif

/// The mount itself, running in the foreground: opens the cache, starts the provider and the
/// filesystem, mounts, tells the launcher it is ready, and serves until unmounted or signalled.
struct Daemon {
    let remote: Remote
    let mountpoint: String
    let cacheDirectory: URL
    let remoteTimeout: Duration
    let blockSize: UInt64
    let pipelineDepth: Int
    let uploadDepth: Int
    /// The cache bound in bytes; nil: a tenth of the disk holding the cache folder.
    let cacheSize: UInt64?
    /// Between asking the remote for changes; zero: only at mount and on `fpfs signal`.
    let pollInterval: Duration
    let isReadOnly: Bool
    /// Let the kernel read complete cached contents itself (FUSE passthrough) where it can.
    let passthrough: Bool
    let trashesDeletions: Bool
    let links: Bool
    let nonMaterializing: Set<String>
    let faultSpec: String?
    let readyFD: Int32?
    /// Who may use the mount and as whom its items show.
    let access: MountAccess
    /// The log file; nil: stderr (a terminal, or journald under systemd).
    let logFile: String?
    let logLevel: Logger.Level

    func run() async throws {
        HeapTrimmer.keepOneHeap()
        try DaemonLog.start(file: logFile, level: logLevel)
        let logger = Logger(label: "fpfs")
        let systemd = SystemdNotifier()
        systemd.send("STATUS=mounting \(remote.name) on \(mountpoint)")
        logger.info(
            "fpfs \(FPFS.version) (commit \(BuildCommit.commit)) mounting \(remote.name) on \(mountpoint), cache \(cacheDirectory.path)"
        )
        // First and let go of last: while it is held, the socket and pid file are this daemon's.
        let lock = try await CacheLock(directory: cacheDirectory, mountpoint: mountpoint)
        defer { lock.release() }

        let store: MetadataStore
        do {
            store = try MetadataStore(file: cacheDirectory.appendingPathComponent("metadata.sqlite"))
        } catch {
            throw CommandFailure("cannot open the metadata store in '\(cacheDirectory.path)': \(error)")
        }
        if let known = try await store.setting("remote"), known != remote.identity {
            throw CommandFailure("the cache folder '\(cacheDirectory.path)' belongs to another remote (\(known))")
        }
        try await store.setSetting("remote", to: remote.identity)

        var provider = try remote.makeProvider(
            stateDirectory: cacheDirectory.appendingPathComponent("provider"), connections: pipelineDepth + 2,
            links: links)
        if trashesDeletions, let features = (provider as? any FeatureDescribing)?.features, !features.contains(.trash) {
            await provider.invalidate()
            throw CommandFailure("--trash: the remote \(remote.name) has no trash to move deleted items to")
        }
        if let faultSpec {
            do {
                provider = try FaultInjector(spec: faultSpec).wrap(provider)
            } catch {
                throw CommandFailure("bad --inject-faults: \(error)")
            }
        }
        let cache = try await BlockCache(
            directory: FilePath(cacheDirectory.appendingPathComponent("blocks").path), blockSize: blockSize,
            store: store)
        if cache.contentsForgottenAtStart > 0 {
            logger.notice(
                "the machine went down before the downloaded bytes of \(cache.contentsForgottenAtStart) cached files were known to be on disk; they are downloaded again when read"
            )
        }

        var configuration = VFSConfiguration()
        configuration.remoteTimeout = remoteTimeout
        configuration.blockSize = blockSize
        configuration.pipelineDepth = pipelineDepth
        configuration.uploadDepth = uploadDepth
        configuration.cacheSize = cacheSize ?? CacheDirectory.defaultCacheSize(of: cacheDirectory)
        configuration.pollInterval = pollInterval > .zero ? pollInterval : nil
        configuration.changeRoundEnded = { HeapTrimmer.workEnded() }
        configuration.isReadOnly = isReadOnly
        configuration.passthrough = passthrough
        configuration.trashesDeletions = trashesDeletions
        configuration.nonMaterializingProcesses = nonMaterializing
        configuration.uid = access.uid
        configuration.gid = access.gid
        configuration.umask = access.umask
        let socketPath = CacheDirectory.controlSocket(in: cacheDirectory)
        configuration.controlSocketPath = socketPath
        logger.debug(
            "block size \(blockSize), pipeline depth \(pipelineDepth), upload depth \(uploadDepth), cache bound \(configuration.cacheSize.map(String.init) ?? "none") bytes, poll interval \(pollInterval), remote timeout \(remoteTimeout), read-only \(isReadOnly), allow_other \(access.allowOther), default_permissions \(access.defaultPermissions), uid \(access.uid), gid \(access.gid), umask \(String(access.umask, radix: 8)), mount flags \(access.mountFlags)"
        )

        let fileSystem: FileSystem
        do {
            fileSystem = try await FileSystem.start(
                provider: provider, store: store, cache: cache, configuration: configuration, logger: logger)
        } catch ProviderError.notAuthenticated(let reason) {
            await provider.invalidate()
            throw CommandFailure("authentication failed for \(remote.name): \(reason)")
        } catch {
            await provider.invalidate()
            throw CommandFailure(remote.startFailure(error))
        }
        if fileSystem.isOffline {
            let warning = "warning: the remote \(remote.name) cannot be reached; serving what is local"
            logger.warning("\(warning)")
            if let readyFD { Self.report(warning, to: readyFD, closing: false) }
        }

        let status = StatusReport.Context(
            remote: remote.name, mountpoint: mountpoint, cacheDirectory: cacheDirectory.path,
            offline: fileSystem.isOffline, pipelineDepth: pipelineDepth, blockSize: blockSize,
            settings: .init(
                readOnly: isReadOnly,
                pollInterval: Double(pollInterval.components.seconds)
                    + Double(pollInterval.components.attoseconds) / 1e18, access: access))
        let control = try ControlServer(path: socketPath) { command in
            switch command {
            case "status":
                return Self.statusReport(of: fileSystem, context: status)
            case "sync":
                fileSystem.retryUploadsNow()
                return Self.statusReport(of: fileSystem, context: status)
            case let signal where signal.hasPrefix("signal"):
                return Self.replicate(
                    fileSystem,
                    waitingAtMost: Int(signal.dropFirst("signal".count).trimmingCharacters(in: .whitespaces)) ?? 60)
            default:
                return CacheControl.answer(command, fileSystem: fileSystem)
                    ?? Data("{\"error\":\"unknown command\"}".utf8)
            }
        }
        defer { control.stop() }

        let pidFile = cacheDirectory.appendingPathComponent("daemon.pid")
        try? Data("\(getpid())\n".utf8).write(to: pidFile)
        defer { try? FileManager.default.removeItem(at: pidFile) }

        let session = FuseSession(
            operations: fileSystem, mountpoint: mountpoint, fsname: "fpfs:\(remote.name)", subtype: "fpfs",
            allowOther: access.allowOther, options: access.fuseOptions)
        fileSystem.attach(session.notifier)
        fileSystem.attach(session.backingFiles)
        do {
            try session.mount()
        } catch {
            throw CommandFailure("cannot mount on '\(mountpoint)': \(error)")
        }
        if let readyFD { Self.report("ready", to: readyFD) }
        systemd.sendReady(
            whenAnswering: mountpoint,
            status: "serving \(remote.name) on \(mountpoint)\(fileSystem.isOffline ? " (offline: what is local)" : "")")
        logger.info("mounted")
        let trimmer = Task { await HeapTrimmer.run() }
        defer { trimmer.cancel() }
        do {
            try await session.run()
        } catch {
            logger.error("the FUSE session ended with an error: \(error)")
        }
        systemd.send("STOPPING=1", "STATUS=unmounted \(mountpoint)")
        logger.info("unmounted")
        // A kernel unmount (fusermount3 -u) does not wait for uploads (DECISIONS 201): say what stays.
        if let queue = try? await fileSystem.uploadQueue(listing: 0), queue.pending > 0 {
            logger.notice(
                "\(UnmountWait.changes(queue)) did not reach the remote; they stay queued in the cache folder '\(cacheDirectory.path)', and the next mount with it sends them"
            )
        }
    }

    /// The status as JSON. Runs on the control server's own thread, which may wait for the store.
    private static func statusReport(of fileSystem: FileSystem, context: StatusReport.Context) -> Data {
        let queue = Mutex(UploadQueue(pending: 0, failing: 0, refused: 0, bytes: 0, first: []))
        let cache = Mutex<CacheUsage?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            if let found = try? await fileSystem.uploadQueue() { queue.withLock { $0 = found } }
            if let usage = try? await fileSystem.cacheUsage() { cache.withLock { $0 = usage } }
            done.signal()
        }
        done.wait()
        return StatusReport(
            context: context, statistics: fileSystem.statisticsSnapshot, uploads: queue.withLock { $0 },
            cache: cache.withLock { $0 } ?? CacheUsage(bytes: 0, bound: nil, pinned: nil)
        ).json()
    }

    /// Runs a round of remote changes (`fpfs signal`) and answers `{"changes": N}`, or
    /// `{"error": "…"}` when it failed or did not end within `seconds`. Runs on a control
    /// connection's own thread.
    private static func replicate(_ fileSystem: FileSystem, waitingAtMost seconds: Int) -> Data {
        let outcome = Mutex<Result<Int, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<Int, any Error>
            do { result = .success(try await fileSystem.replicateChangesNow()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        let answer: [String: String]
        if done.wait(timeout: .now() + .seconds(seconds)) == .timedOut {
            answer = ["error": "the remote's changes are still being applied after \(seconds) s"]
        } else {
            switch outcome.withLock({ $0 }) {
            case .success(let count): answer = ["changes": String(count)]
            case .failure(let error): answer = ["error": "\(error)"]
            case nil: answer = ["error": "no answer"]
            }
        }
        return (try? JSONEncoder().encode(answer)) ?? Data()
    }

    /// Writes one line to the launcher's pipe, and closes it unless more lines follow.
    static func report(_ line: String, to fd: Int32, closing: Bool = true) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if closing { close(fd) }
    }
}
