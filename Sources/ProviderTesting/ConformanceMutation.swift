import FileProviderKit
import Foundation

/// A change the conformance suite needs made on the remote behind the provider's back — as
/// another client would — to see versions move and changes get reported. Paths are relative to
/// the remote's root. A test hands the suite a closure that applies these; `apply(to:)` and
/// `apply(inDirectory:)` are ready-made ones for an in-memory remote and for a folder.
public enum ConformanceMutation: Sendable, Hashable, CustomStringConvertible {
    case createFile(path: String, contents: [UInt8])
    case modifyFile(path: String, contents: [UInt8])
    case renameFile(from: String, to: String)
    case deleteFile(path: String)

    /// Applies the change to an in-memory remote.
    public func apply(to provider: InMemoryProvider) throws {
        switch self {
        case .createFile(let path, let contents): try provider.addFile(path: path, contents: contents)
        case .modifyFile(let path, let contents): try provider.setContents(path: path, contents)
        case .renameFile(let from, let to): try provider.move(path: from, to: to)
        case .deleteFile(let path): try provider.remove(path: path)
        }
    }

    /// Applies the change to a folder that serves as the remote.
    public func apply(inDirectory root: URL) async throws {
        let mutation = self
        try await BlockingIO.run {
            let files = FileManager.default
            switch mutation {
            case .createFile(let path, let contents), .modifyFile(let path, let contents):
                try Data(contents).write(to: root.appending(path: path))
            case .renameFile(let from, let to):
                try files.moveItem(at: root.appending(path: from), to: root.appending(path: to))
            case .deleteFile(let path):
                try files.removeItem(at: root.appending(path: path))
            }
        }
    }

    public var description: String {
        switch self {
        case .createFile(let path, let contents): "create \(path) (\(contents.count) bytes)"
        case .modifyFile(let path, let contents): "modify \(path) (\(contents.count) bytes)"
        case .renameFile(let from, let to): "rename \(from) to \(to)"
        case .deleteFile(let path): "delete \(path)"
        }
    }
}
