import Foundation
import Synchronization
import VFS

/// The daemon's answers to the cache commands of its control socket: `pin`, `unpin`, `evict` and
/// `pin-status`, each followed by inode numbers (the CLI finds them with stat). Each answer is
/// JSON; a failure is `{"error": MESSAGE}`.
enum CacheControl {
    /// The answer to `command`, or nil when it is not a cache command.
    static func answer(_ command: String, fileSystem: FileSystem) -> Data? {
        let words = command.split(separator: " ")
        guard let verb = words.first, ["pin", "unpin", "evict", "pin-status"].contains(verb) else { return nil }
        let inodes = words.dropFirst().compactMap { UInt64($0) }
        guard inodes.count == words.count - 1, !inodes.isEmpty else {
            return failure("\(verb) needs inode numbers")
        }
        return waiting {
            do {
                switch verb {
                case "pin":
                    for inode in inodes { try await fileSystem.pin(inode) }
                    return try encode(["pinned": inodes.count])
                case "unpin":
                    for inode in inodes { try await fileSystem.unpin(inode) }
                    return try encode(["unpinned": inodes.count])
                case "evict":
                    var outcomes: [EvictionOutcome] = []
                    for inode in inodes { outcomes.append(try await fileSystem.evict(inode)) }
                    return try encode(outcomes)
                default:
                    var progress: [PinProgress] = []
                    for inode in inodes { progress.append(try await fileSystem.pinProgress(inode)) }
                    return try encode(progress)
                }
            } catch {
                return failure("\(error)")
            }
        }
    }

    /// Runs `body` and waits for it: the control server answers on a thread of its own.
    private static func waiting(_ body: @escaping @Sendable () async -> Data) -> Data {
        let answer = Mutex(Data())
        let done = DispatchSemaphore(value: 0)
        Task {
            let data = await body()
            answer.withLock { $0 = data }
            done.signal()
        }
        done.wait()
        return answer.withLock { $0 }
    }

    private static func encode(_ value: some Encodable) throws -> Data {
        try JSONEncoder().encode(value)
    }

    static func failure(_ message: String) -> Data {
        (try? JSONEncoder().encode(["error": message])) ?? Data("{}".utf8)
    }
}
