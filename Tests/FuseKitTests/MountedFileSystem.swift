import Foundation
import FuseKit
import TestServers

/// A `TestFileSystem` mounted on a fresh temporary directory for the length of one test, plus
/// the helpers the tests drive it with. Every path out of `with` ends the session, waits for
/// `run()` to return and removes the directory, so no test leaves a mount behind.
struct MountedFileSystem: Sendable {
    static let fsname = "fpfs:/test/remote"

    let mountpoint: String
    let fileSystem: TestFileSystem
    let session: FuseSession

    static func with<Result: Sendable>(
        _ body: (MountedFileSystem) async throws -> Result
    ) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fpfs-fusekit-\(UUID())")
        let mountpoint = directory.appendingPathComponent("mnt").path
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fileSystem = try TestFileSystem(directory: directory)
        let session = FuseSession(operations: fileSystem, mountpoint: mountpoint, fsname: fsname)
        try session.mount()
        let serving = Task.detached { try await session.run() }
        // Ends the session on every path; the waits below make sure it is gone before returning.
        defer { session.unmount() }
        let outcome: Swift.Result<Result, any Error>
        do {
            outcome = .success(
                try await body(MountedFileSystem(mountpoint: mountpoint, fileSystem: fileSystem, session: session)))
        } catch {
            outcome = .failure(error)
        }
        session.unmount()
        try await serving.value
        return try outcome.get()
    }

    func path(_ name: String) -> String { mountpoint + "/" + name }

    /// Runs blocking file system calls on a plain thread: they wait for this process's own FUSE
    /// answers, which need the cooperative pool free.
    static func offPool<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await onOwnThread(work)
    }

    /// Runs a command and returns its exit status and standard output.
    static func run(_ arguments: String...) async throws -> (status: Int32, output: String) {
        let finished = try await ChildProcess.run(arguments)
        return (finished.status, finished.text)
    }

    /// The errno a POSIX call left, or 0 if `call` succeeded.
    static func errno(of call: @escaping @Sendable () -> Int) async throws -> Int32 {
        try await offPool { call() < 0 ? Glibc.errno : 0 }
    }
}
