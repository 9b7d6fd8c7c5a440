import Foundation

/// Paths named on the command line, made absolute and standard without asking the file system:
/// a stat of a path on a mount whose daemon hangs never returns, and `fpfs unmount` is what a
/// user runs then.
enum CommandLinePath {
    static func absolute(_ argument: String) -> String {
        // With `isDirectory` given, URL does not stat the path to find out.
        URL(fileURLWithPath: argument, isDirectory: true).standardizedFileURL.path
    }
}
