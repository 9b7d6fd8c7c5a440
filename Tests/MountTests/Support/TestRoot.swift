import Foundation

/// Where mount tests keep their files.
///
/// scripts/test.sh points `FPFS_TEST_TMPDIR` at a fresh directory, and unmounts and removes
/// everything under it when the run ends, however it ends. Run by hand, the tests use
/// /tmp/fpfs-mounttests and keep the generated fixture there, so the 1 GiB file is made once.
enum TestRoot {
    static let path: String = {
        let environment = ProcessInfo.processInfo.environment
        let path = environment["FPFS_TEST_TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp/fpfs-mounttests"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()
}
