import Foundation
import Testing

extension MountTests {
    /// `fpfs mount` refuses bad input with a non-zero exit and a message that names the problem,
    /// and leaves nothing mounted and no daemon running.
    @Suite("Bad input is refused")
    struct BadInputTests {
        /// One way to call `fpfs mount` wrongly.
        enum BadMount: String, CaseIterable, CustomStringConvertible {
            case missingRemote = "a remote that does not exist"
            case missingMountpoint = "a mountpoint that does not exist"
            case nonEmptyMountpoint = "a mountpoint that is not empty"
            case unknownScheme = "an unknown URL scheme"
            case unknownOption = "an unknown option"
            case blockSizeNotPowerOfTwo = "--block-size 3000"
            case blockSizeTooSmall = "--block-size 2KiB"
            case blockSizeTooLarge = "--block-size 128MiB"
            case pipelineDepthZero = "--pipeline-depth 0"
            case pipelineDepthTooLarge = "--pipeline-depth 129"
            case pipelineDepthNotNumber = "--pipeline-depth abc"
            case remoteTimeoutZero = "--remote-timeout 0"
            case uploadDepthZero = "--upload-depth 0"
            case uploadDepthTooLarge = "--upload-depth 129"
            case cacheSizeZero = "--cache-size 0"
            case cacheSizeNotSize = "--cache-size abc"
            case cacheSizeHuge = "--cache-size 99999999999GiB"
            case cacheSizeNegative = "--cache-size -5MiB"
            case remoteTimeoutNegative = "--remote-timeout -5"
            case pollIntervalNegative = "--poll-interval -1"
            case bandwidthHuge = "file://…?bandwidth=99999999999GiB"
            case delayHuge = "file://…?delay=1e300s"
            case delayInfinite = "file://…?delay=infs"
            case webdavPortTooLarge = "webdav://127.0.0.1:99999/"

            var description: String { rawValue }
        }

        @Test("fpfs mount exits non-zero, says why on stderr and mounts nothing", arguments: BadMount.allCases)
        func refused(_ bad: BadMount) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("file.txt", "contents\n")
            var remote = scratch.remote
            var mountpoint = scratch.mountpoint
            var options: [String] = []
            /// The message must contain one of these to count as naming the problem.
            let names: [String]
            switch bad {
            case .missingRemote:
                remote = scratch.path + "/no-such-remote"
                names = ["no-such-remote"]
            case .missingMountpoint:
                mountpoint = scratch.path + "/no-such-mountpoint"
                names = ["no-such-mountpoint"]
            case .nonEmptyMountpoint:
                try Data("occupied\n".utf8).write(to: URL(fileURLWithPath: mountpoint + "/occupant"))
                names = ["empty", mountpoint]
            case .unknownScheme:
                remote = "ftp://x/y"
                names = ["ftp"]
            case .unknownOption:
                options = ["--no-such-option"]
                names = ["no-such-option"]
            case .blockSizeNotPowerOfTwo, .blockSizeTooSmall, .blockSizeTooLarge, .pipelineDepthZero,
                .pipelineDepthTooLarge, .pipelineDepthNotNumber, .remoteTimeoutZero, .uploadDepthZero,
                .uploadDepthTooLarge, .cacheSizeZero, .cacheSizeNotSize:
                options = bad.rawValue.split(separator: " ").map(String.init)
                names = [options[0]]
            case .cacheSizeHuge:
                options = bad.rawValue.split(separator: " ").map(String.init)
                names = ["--cache-size must be a size from 1MiB to 1EiB"]
            case .cacheSizeNegative, .remoteTimeoutNegative:
                options = bad.rawValue.split(separator: " ").map(String.init)
                names = [options[0] + " must be positive"]
            case .pollIntervalNegative:
                options = bad.rawValue.split(separator: " ").map(String.init)
                names = ["--poll-interval must be zero or positive"]
            case .bandwidthHuge, .delayHuge, .delayInfinite:
                let query = bad.rawValue.split(separator: "?")[1]
                remote = "file://" + scratch.remote + "?" + query
                names = [query.hasPrefix("delay") ? "delay must be a duration from 0" : "not a valid bandwidth"]
            case .webdavPortTooLarge:
                remote = bad.rawValue
                names = ["from 1 to 65535"]
            }

            let output = try await TestMount.mountCommand(
                remote: remote, mountpoint: mountpoint, cacheDir: scratch.cache, options: options,
                timeout: .seconds(30)
            ).run()
            defer { _ = try? FpfsBinary.command(["unmount", mountpoint], timeout: .seconds(20)).runBlocking() }

            #expect(!output.timedOut, "fpfs mount hung on \(bad)")
            #expect(
                output.signal == nil && !output.stderr.contains("Fatal error"),
                "fpfs mount crashed on \(bad): \(output)")
            #expect(output.status != 0, "fpfs mount accepted \(bad)")
            let message = output.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(!message.isEmpty, "no message on stderr for \(bad)")
            #expect(names.contains { message.contains($0) }, "the message does not name the problem: \(message)")
            #expect(MountTable.entries(under: scratch.path).isEmpty, "something is mounted after \(bad)")
            if let daemon = DaemonProcess(pidFile: scratch.cache + "/daemon.pid") {
                #expect(await daemon.waitForExit(timeout: .seconds(5)), "a daemon still runs after \(bad)")
            }
        }
    }
}
