import Foundation

/// The fpfs executable under test: `FPFS_BINARY` if set, else `.build/debug/fpfs` in this package.
enum FpfsBinary {
    /// The package root, three folders above this file (Tests/MountTests/Support/).
    static let packageRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The path of the binary; throws a message saying how to get one if it is not there.
    static func path() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let path = environment["FPFS_BINARY"].flatMap { $0.isEmpty ? nil : $0 } ?? packageRoot + "/.build/debug/fpfs"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw MountTestFailure(
                "the fpfs binary is missing at \(path): run `swift build` first (scripts/test.sh does), "
                    + "or set FPFS_BINARY to the binary to test")
        }
        return path
    }

    /// `fpfs ARGUMENTS…` as a command with a deadline.
    static func command(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> Command {
        Command([try path()] + arguments, timeout: timeout)
    }
}
