import FileProviderKit
import Foundation

extension BlockingIO {
    /// The bytes of a file, or no bytes for nil; read off the cooperative threads.
    static func read(_ url: URL?) async throws -> [UInt8] {
        guard let url else { return [] }
        return try await run { Array(try Data(contentsOf: url)) }
    }
}
