import ArgumentParser
import Foundation
import VFS

/// `fpfs evict PATH…`: frees the local copies of files (folders recursively) now.
struct EvictCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evict", abstract: "Free the local bytes of files and folders (recursively) now.",
        discussion: """
            Files with changes not yet on the remote, pinned files and open files are kept and \
            named; the command then exits non-zero.
            """)

    @Argument(help: "Files or folders in an fpfs mount.")
    var paths: [String]

    func run() async throws {
        do {
            let targets = try paths.map(MountedPath.init)
            var refused: [String] = []
            var freed: UInt64 = 0
            var evicted = 0
            for (group, answer) in try MountedPath.send("evict", for: targets) {
                let outcomes = try JSONDecoder().decode([EvictionOutcome].self, from: answer)
                for (target, outcome) in zip(group, outcomes) {
                    freed += outcome.freedBytes
                    evicted += outcome.evicted
                    for refusal in outcome.refused {
                        let name = refusal.path.isEmpty ? target.path : target.path + "/" + refusal.path
                        refused.append("\(name) \(refusal.reason)")
                    }
                }
            }
            print("freed \(StatusReport.bytes(freed)) of \(evicted) files")
            guard refused.isEmpty else {
                var standardError = StandardError()
                for line in refused.dropLast() { print("fpfs: not evicted: \(line)", to: &standardError) }
                throw CommandFailure("not evicted: \(refused.last ?? "")")
            }
        } catch let failure as CommandFailure {
            throw CommandFailure.exit(failure.message)
        }
    }
}
