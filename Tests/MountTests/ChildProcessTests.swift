import Foundation
import TestServers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The children the tests start (tools, servers, `fpfs mount`) carry none of the test process's
/// own descriptors: a pipe or socket of another test that leaked into a long-lived child would
/// keep whoever waits for its end-of-file waiting (DECISIONS 113).
@Suite struct ChildProcessTests {
    @Test func aChildHoldsOnlyItsStandardDescriptors() async throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        // `ls` opens the folder it lists as descriptor 3.
        let listing = try await ChildProcess.run(["sh", "-c", "exec ls /proc/self/fd"])
        #expect(listing.status == 0)
        #expect(listing.text.split(separator: "\n") == ["0", "1", "2", "3"])
    }
}
