import ArgumentParser
import Foundation
import VFS

/// `fpfs mount REMOTE MOUNTPOINT`: returns once the mount is usable, or fails with a message.
struct MountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Mount REMOTE (a folder path, file://, webdav://, webdavs://, s3://) on MOUNTPOINT.",
        discussion: """
            Returns once the mount is usable, leaving a daemon that serves it until 'fpfs unmount' \
            (or umount); the daemon logs to fpfs.log in the cache folder (or --log-file).

            A WebDAV password comes from the environment variable FPFS_PASSWORD or from ~/.netrc \
            ($NETRC), never from the command line. S3 keys come from AWS_ACCESS_KEY_ID and \
            AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), or from AWS_PROFILE with ~/.aws/credentials \
            and ~/.aws/config, as the AWS tools find them; never from the command line.
            """)

    @Argument(
        help:
            "The remote: a folder path, file:///path[?delay=300ms&bandwidth=50MiB], webdav(s)://host[:port]/path, or s3://bucket[/prefix]."
    )
    var remote: String

    @Option(help: "The user to log in to a WebDAV server as (password: FPFS_PASSWORD or ~/.netrc).")
    var user: String?

    @Argument(help: "An existing, empty folder to mount on.")
    var mountpoint: String

    @Option(help: "Where to keep the cache and metadata (default: derived from REMOTE under ~/.cache/fpfs).")
    var cacheDir: String?

    @Flag(help: "Stay attached to the terminal (for systemd and debugging).")
    var foreground = false

    @Option(
        parsing: .unconditional,
        help:
            "How long without progress from the remote before a request fails with EHOSTDOWN (1s...1h; e.g. 30, 30s, 2m)."
    )
    var remoteTimeout = "30"

    @Option(
        parsing: .unconditional,
        help: "Alignment of partial fetches and cache blocks: a power of two from 4KiB to 64MiB.")
    var blockSize = "64KiB"

    @Option(parsing: .unconditional, help: "At most this many content fetches in flight at once (1...128).")
    var pipelineDepth = 8

    @Option(parsing: .unconditional, help: "At most this many local changes sent to the remote at once (1...128).")
    var uploadDepth = 4

    @Option(
        parsing: .unconditional,
        help:
            "The most the cache may hold: bytes, or 10G, 10GiB (binary), 10GB (decimal) (default: a tenth of its disk)."
    )
    var cacheSize: String?

    @Option(
        parsing: .unconditional,
        help:
            "How often to ask the remote for its changes (0: only at mount and on 'fpfs signal'; up to 1 day; e.g. 30, 500ms, 1m, 2h)."
    )
    var pollInterval = "30"

    @Flag(help: "Refuse every change with EROFS.")
    var readOnly = false

    @Flag(
        inversion: .prefixedNo,
        help:
            "Let the kernel read files whose contents are all local straight from the cache (needs root and Linux 6.9)."
    )
    var passthrough = true

    @Flag(help: "unlink and rmdir move items to the remote's trash (a folder remote; refused on WebDAV).")
    var trash = false

    @Option(help: "The S3 server, e.g. http://127.0.0.1:7480 (default: the profile's endpoint_url, else AWS).")
    var s3Endpoint: String?

    @Option(help: "The S3 region requests are signed for (default: AWS_REGION or the profile's, else us-east-1).")
    var s3Region: String?

    @Flag(help: "Address the bucket as https://host/BUCKET (the default for a custom endpoint).")
    var s3PathStyle = false

    @Flag(help: "Send S3 requests unsigned, for a public bucket.")
    var s3NoSign = false

    @Option(help: "S3: files larger than this go up in parts (bytes or KiB/MiB/GiB; default 64MiB).")
    var s3MultipartThreshold: String?

    @Option(help: "S3: the size of each part (at least 5MiB; default 16MiB, raised to stay within 10,000 parts).")
    var s3PartSize: String?

    @Flag(help: "On WebDAV and S3, keep symlinks as NAME.rclonelink files holding the target (as rclone does).")
    var links = false

    @Option(
        help: ArgumentHelp(
            "Comma-separated process names that may not cause downloads ('' for none).",
            discussion: "Default: common indexers and thumbnailers (updatedb, tracker, baloo, thumbnailers)."))
    var nonMaterializing: String?

    @OptionGroup(title: "Access")
    var access: MountAccessOptions

    @OptionGroup(title: "Logging")
    var logging: LoggingOptions

    @Option(help: .hidden)
    var injectFaults: String?

    @Option(help: .hidden)
    var readyFd: Int32?

    @Option(help: .hidden)
    var secretsFd: Int32?

    func run() async throws {
        do {
            let remoteTimeout = try CommandFailure.checkDuration(
                self.remoteTimeout, of: "--remote-timeout", in: 1...3600)
            try CommandFailure.check(pipelineDepth, of: "--pipeline-depth", in: 1...128, "a whole number")
            try CommandFailure.check(uploadDepth, of: "--upload-depth", in: 1...128, "a whole number")
            let pollInterval = try CommandFailure.checkDuration(self.pollInterval, of: "--poll-interval", in: 0...86400)
            let access = try self.access.resolved()
            let blockSize = try Self.parseBlockSize(self.blockSize)
            let cacheSize = try self.cacheSize.map(Self.parseCacheSize)
            var remote = try Remote(
                parsing: self.remote, user: user,
                s3: .init(
                    endpoint: s3Endpoint, region: s3Region, pathStyle: s3PathStyle, noSign: s3NoSign,
                    multipartThreshold: try s3MultipartThreshold.map {
                        try Remote.parseByteCount($0, option: "--s3-multipart-threshold")
                    },
                    partSize: try s3PartSize.map(Self.parsePartSize), partsInFlight: uploadDepth))
            remote.secrets = SecretHandOff.take(fromDescriptor: secretsFd)
            let cacheDirectory =
                cacheDir.map { URL(fileURLWithPath: $0).standardizedFileURL }
                ?? CacheDirectory.default(for: remote)
            if let reason = try remote.unreachableReason(),
                !FileManager.default.fileExists(atPath: cacheDirectory.appendingPathComponent("metadata.sqlite").path)
            {
                throw CommandFailure(reason)
            }
            let mountpoint = try Mountpoint.prepare(self.mountpoint)
            do {
                try FileManager.default.createDirectory(at: cacheDirectory, withIntermediateDirectories: true)
            } catch {
                throw CommandFailure(
                    "cannot create the cache folder '\(cacheDirectory.path)': \(error.localizedDescription)")
            }
            if foreground {
                let daemon = Daemon(
                    remote: remote, mountpoint: mountpoint, cacheDirectory: cacheDirectory,
                    remoteTimeout: remoteTimeout, blockSize: blockSize, pipelineDepth: pipelineDepth,
                    uploadDepth: uploadDepth, cacheSize: cacheSize, pollInterval: pollInterval, isReadOnly: readOnly,
                    passthrough: passthrough, trashesDeletions: trash, links: links,
                    nonMaterializing: nonMaterializingNames,
                    faultSpec: injectFaults, readyFD: readyFd, access: access, logFile: logging.logFile,
                    logLevel: logging.level)
                try await daemon.run()
            } else {
                var arguments = [
                    "mount", self.remote, mountpoint, "--foreground", "--cache-dir", cacheDirectory.path,
                    "--remote-timeout", self.remoteTimeout, "--block-size", self.blockSize,
                    "--pipeline-depth", String(pipelineDepth), "--upload-depth", String(uploadDepth),
                    "--poll-interval", self.pollInterval,
                    "--ready-fd", "3",
                ]
                let logFile =
                    logging.logFile.map(CommandLinePath.absolute)
                    ?? cacheDirectory.appendingPathComponent("fpfs.log").path
                // The daemon's output goes there from its start: a bad path fails here, clearly.
                close(try DaemonLog.openAppending(logFile))
                arguments += self.access.arguments + logging.levelArguments + ["--log-file", logFile]
                if readOnly { arguments.append("--read-only") }
                if !passthrough { arguments.append("--no-passthrough") }
                if let cacheSize = self.cacheSize { arguments += ["--cache-size", cacheSize] }
                if trash { arguments.append("--trash") }
                if links { arguments.append("--links") }
                if let nonMaterializing { arguments += ["--non-materializing", nonMaterializing] }
                if let user { arguments += ["--user", user] }
                if let s3Endpoint { arguments += ["--s3-endpoint", s3Endpoint] }
                if let s3Region { arguments += ["--s3-region", s3Region] }
                if s3PathStyle { arguments.append("--s3-path-style") }
                if s3NoSign { arguments.append("--s3-no-sign") }
                if let s3MultipartThreshold { arguments += ["--s3-multipart-threshold", s3MultipartThreshold] }
                if let s3PartSize { arguments += ["--s3-part-size", s3PartSize] }
                if let injectFaults { arguments += ["--inject-faults", injectFaults] }
                try DaemonLauncher.launch(
                    arguments: arguments, secrets: remote.secrets,
                    logFile: URL(fileURLWithPath: logFile), timeout: remoteTimeout + .seconds(30))
            }
        } catch let failure as CommandFailure {
            if let readyFd { Daemon.report("error: \(failure.message)", to: readyFd) }
            throw CommandFailure.exit(failure.message)
        }
    }

    /// The names given with --non-materializing, or the default list.
    private var nonMaterializingNames: Set<String> {
        guard let nonMaterializing else { return VFSConfiguration.defaultNonMaterializingProcesses }
        return Set(
            nonMaterializing.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            })
    }

    /// At least 1 MiB and at most 1 EiB (2^60 bytes: any disk, with room below the 2^63 of an
    /// off_t), written as bytes or with KiB/MiB/GiB.
    static func parseCacheSize(_ text: String) throws -> UInt64 {
        let message =
            "--cache-size must be a size from 1MiB to 1EiB (e.g. 104857600, 100MiB, 5GiB), not '\(text)'"
        guard !text.hasPrefix("-") else { throw CommandFailure("--cache-size must be positive: \(message)") }
        guard let size = try? Remote.parseByteCount(text, option: "cache size"), (1 << 20...1 << 60).contains(size)
        else { throw CommandFailure(message) }
        return size
    }

    /// At least 5 MiB (S3's smallest part) and at most 5 GiB (its largest).
    static func parsePartSize(_ text: String) throws -> UInt64 {
        guard let size = try? Remote.parseByteCount(text, option: "part size"), size >= 5 << 20, size <= 5 << 30 else {
            throw CommandFailure("--s3-part-size must be a size from 5MiB to 5GiB (e.g. 16MiB), not '\(text)'")
        }
        return size
    }

    /// A power of two from 4 KiB to 64 MiB, written as bytes or with KiB/MiB.
    static func parseBlockSize(_ text: String) throws -> UInt64 {
        let message = "--block-size must be a power of two from 4KiB to 64MiB (e.g. 4096, 64KiB, 1MiB), not '\(text)'"
        guard let size = try? Remote.parseByteCount(text, option: "block size"),
            size >= 4096, size <= 64 << 20, size & (size - 1) == 0
        else { throw CommandFailure(message) }
        return size
    }
}
