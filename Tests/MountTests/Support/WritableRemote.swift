import Foundation
import TestServers

/// The remote of a write test: the scratch directory's `remote/` folder, mounted as a folder or
/// served by Apache mod_dav, `rclone serve webdav` or the Nextcloud-like test server. Either can go away and come back where the mount expects it: the
/// server is stopped and started again on the same port; the folder is moved aside and back, as
/// a disk that is unplugged and plugged in again.
final class WritableRemote: @unchecked Sendable {
    enum Kind: String, CaseIterable, CustomStringConvertible, Sendable {
        case folder
        case apache
        case rclone
        case nextcloud

        /// The kinds the write tests run on.
        static let writeTested: [Kind] = [.folder, .apache, .rclone]

        var description: String { rawValue }
    }

    let kind: Kind
    let scratch: Scratch
    /// Guards `server`.
    private let lock = NSLock()
    private var server: WebDAVTestServer?
    /// What `fpfs mount` is given.
    let argument: String
    private let port: Int?

    private init(kind: Kind, scratch: Scratch, server: WebDAVTestServer?) {
        self.kind = kind
        self.scratch = scratch
        self.server = server
        self.argument = server?.remote ?? scratch.remote
        self.port = server?.port
    }

    static func start(_ kind: Kind, in scratch: Scratch, maximumRequestBody: Int? = nil) async throws -> WritableRemote
    {
        switch kind {
        case .folder:
            return WritableRemote(kind: kind, scratch: scratch, server: nil)
        case .apache, .rclone, .nextcloud:
            try scratch.openRemoteToServers()
            let server = try await WebDAVTestServer.start(
                Self.serverKind(kind), serving: URL(fileURLWithPath: scratch.remote),
                maximumRequestBody: maximumRequestBody)
            return WritableRemote(kind: kind, scratch: scratch, server: server)
        }
    }

    private static func serverKind(_ kind: Kind) -> WebDAVTestServer.Kind {
        switch kind {
        case .rclone: .rclone
        case .nextcloud: .nextcloud
        case .folder, .apache: .apache
        }
    }

    /// The server's access log (empty for a folder).
    func accessLog() async throws -> [AccessLogEntry] {
        try await lock.withLock { server }?.accessLog() ?? []
    }

    /// Where the remote keeps its files.
    var folder: String { scratch.remote }

    /// Where a folder remote's files are while it is away (an Apache remote's stay in `folder`).
    var awayPath: String { scratch.path + "/remote-away" }

    /// Makes the remote unreachable.
    func goAway() throws {
        switch kind {
        case .folder:
            try FileManager.default.moveItem(atPath: folder, toPath: awayPath)
        case .apache, .rclone, .nextcloud:
            let running = lock.withLock {
                defer { server = nil }
                return server
            }
            running?.stop()
        }
    }

    /// Makes the remote reachable again, where it was.
    func comeBack() async throws {
        guard let port else {
            try FileManager.default.moveItem(atPath: awayPath, toPath: folder)
            return
        }
        let started = try await WebDAVTestServer.start(
            Self.serverKind(kind), serving: URL(fileURLWithPath: folder), port: port)
        lock.withLock { server = started }
    }

    /// Stops the server, if any, for good.
    func stop() {
        let running = lock.withLock {
            defer { server = nil }
            return server
        }
        running?.stop()
    }
}
