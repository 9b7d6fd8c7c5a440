import FileProviderKit
import Foundation
import Glibc
import LocalProvider
import TestServers

/// A temporary folder for one test, written with raw system calls so names may be any bytes, and
/// removed when the test lets go of it.
final class TestFolder: Sendable {
    let url: URL
    let path: String

    init() throws {
        let url = FileManager.default.temporaryDirectory.appending(path: "fpfs-local-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        self.url = url
        path = url.path(percentEncoded: false)
    }

    deinit {
        _ = try? ChildProcess.runBlocking(["rm", "-rf", path])
    }

    /// A provider on this folder.
    func provider(_ options: LocalProvider.Options = .init()) throws -> LocalProvider {
        try LocalProvider(root: url, options: options)
    }

    /// The absolute path of `relative`, as bytes.
    func absolute(_ relative: [UInt8]) -> [UInt8] { Array(path.utf8) + [0x2F] + relative }

    func write(_ relative: String, _ contents: [UInt8]) throws { try write(Array(relative.utf8), contents) }

    func write(_ relative: [UInt8], _ contents: [UInt8]) throws {
        let descriptor = try call("open") { absolute(relative).withC { open($0, O_WRONLY | O_CREAT | O_TRUNC, 0o644) } }
        defer { close(descriptor) }
        _ = try call("write") { contents.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) } }
    }

    func read(_ relative: String) throws -> [UInt8] {
        try Array(Data(contentsOf: url.appending(path: relative)))
    }

    func makeDirectory(_ relative: String) throws {
        _ = try call("mkdir") { absolute(Array(relative.utf8)).withC { mkdir($0, 0o755) } }
    }

    func makeSymlink(_ relative: String, to target: String) throws {
        _ = try call("symlink") { absolute(Array(relative.utf8)).withC { symlink(target, $0) } }
    }

    func makeFIFO(_ relative: String) throws {
        _ = try call("mkfifo") { absolute(Array(relative.utf8)).withC { mkfifo($0, 0o644) } }
    }

    func rename(_ from: String, _ to: String) throws {
        _ = try call("rename") {
            absolute(Array(from.utf8)).withC { from in absolute(Array(to.utf8)).withC { Glibc.rename(from, $0) } }
        }
    }

    func remove(_ relative: String) throws { try FileManager.default.removeItem(at: url.appending(path: relative)) }

    func setPermissions(_ relative: String, _ mode: mode_t) throws {
        _ = try call("chmod") { absolute(Array(relative.utf8)).withC { chmod($0, mode) } }
    }

    /// The inode of `relative`, to see whether a write kept the file.
    func inode(_ relative: String) throws -> UInt64 {
        var status = stat()
        _ = try call("lstat") { absolute(Array(relative.utf8)).withC { lstat($0, &status) } }
        return UInt64(status.st_ino)
    }

    func exists(_ relative: String) -> Bool {
        var status = stat()
        return absolute(Array(relative.utf8)).withC { lstat($0, &status) } == 0
    }

    /// A file outside the folder holding `contents`, as the engine hands new contents over.
    func contentsFile(_ contents: [UInt8]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appending(path: "fpfs-contents-\(UUID().uuidString)")
        try Data(contents).write(to: url)
        return url
    }

    private func call<Result: BinaryInteger>(_ name: String, _ body: () -> Result) throws -> Result {
        let result = body()
        guard result >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO, userInfo: ["call": name]) }
        return result
    }
}

extension [UInt8] {
    fileprivate func withC<Result>(_ body: (UnsafePointer<CChar>) -> Result) -> Result {
        (self + [0]).withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) } }
    }
}
