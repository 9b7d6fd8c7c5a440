import FileProviderKit
import Foundation
import ProviderTesting
import Testing

/// What engine tests rely on beyond the contract: the recorder's counts, bytes and concurrency,
/// expiring pages and anchors, the fetch delay and its cancellation, and incremental fetches.
@Suite struct InMemoryProviderTests {
    @Test func recordsCallsRangesAndBytes() async throws {
        let remote = InMemoryProvider()
        let file = try remote.addFile(path: "a/b.bin", contents: ConformanceFixture.pattern(count: 10_000, seed: 9))
        _ = try await remote.item(for: file.identifier)
        _ = try await remote.fetchContents(for: file.identifier, version: nil, into: MemorySink())
        let result = try await remote.fetchPartialContents(
            for: file.identifier, version: file.version, minimalRange: 5000..<5001, aligningTo: 4096, options: [],
            into: MemorySink())
        #expect(result.retrievedRange == 4096..<8192)
        #expect(remote.recorder.count(.item) == 1)
        #expect(remote.recorder.count(.fetchContents) == 1)
        #expect(remote.recorder.calls(of: .fetchPartialContents).map(\.range) == [5000..<5001])
        #expect(remote.recorder.bytesServed == 10_000 + 4096)
        #expect(remote.recorder.calls.map(\.operation) == [.item, .fetchContents, .fetchPartialContents])
        remote.recorder.reset()
        #expect(remote.recorder.calls.isEmpty && remote.recorder.bytesServed == 0)
    }

    @Test func countsFetchesInFlight() async throws {
        let remote = InMemoryProvider()
        let files = try (0..<5).map { try remote.addFile(path: "f\($0)", contents: [UInt8($0)]) }
        remote.holdFetches()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for file in files {
                group.addTask {
                    _ = try await remote.fetchContents(for: file.identifier, version: nil, into: MemorySink())
                }
            }
            let deadline = ContinuousClock.now + .seconds(20)
            while remote.recorder.fetchesInFlight < 5, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            remote.releaseFetches()
            try await group.waitForAll()
        }
        #expect(remote.recorder.maximumFetchesInFlight == 5)
        #expect(remote.recorder.fetchesInFlight == 0)
    }

    @Test func aDelayedFetchIsCancelledPromptly() async throws {
        let remote = InMemoryProvider(configuration: .init(fetchDelay: .seconds(60)))
        let file = try remote.addFile(path: "slow", contents: [1, 2, 3])
        let fetch = Task { try await remote.fetchContents(for: file.identifier, version: nil, into: MemorySink()) }
        while remote.recorder.fetchesInFlight == 0 { try await Task.sleep(for: .milliseconds(5)) }
        fetch.cancel()
        await #expect(throws: CancellationError.self) { try await fetch.value }
        #expect(remote.recorder.fetchesInFlight == 0)
    }

    @Test func incrementalFetchServesOnlyChangedChunks() async throws {
        let remote = InMemoryProvider(configuration: .init(writeChunkSize: 1000))
        var contents = ConformanceFixture.pattern(count: 10_000, seed: 4)
        let old = try remote.addFile(path: "file", contents: contents)
        let existing = FileManager.default.temporaryDirectory.appending(path: "fpfs-incremental-\(UUID().uuidString)")
        try Data(contents).write(to: existing)
        defer { try? FileManager.default.removeItem(at: existing) }
        contents[2500] ^= 0xFF
        try remote.setContents(path: "file", contents)
        let sink = MemorySink()
        _ = try await remote.fetchContents(
            for: old.identifier, version: nil, usingExistingContentsAt: existing, existingVersion: old.version,
            into: sink)
        #expect(sink.contents == contents)
        #expect(remote.recorder.bytesServed == 1000)
    }

    @Test func strictVersioningRefusesAReplacedVersion() async throws {
        let remote = InMemoryProvider()
        let old = try remote.addFile(path: "file", text: "one")
        let new = try remote.setContents(path: "file", Array("two".utf8))
        #expect(new.version.content != old.version.content)
        await #expect(throws: ProviderError.versionNoLongerAvailable) {
            try await remote.fetchPartialContents(
                for: old.identifier, version: old.version, minimalRange: 0..<3, aligningTo: 4096,
                options: .strictVersioning, into: MemorySink())
        }
        let metadataOnly = try remote.setMetadata(path: "file", fields: .permissions, from: new)
        #expect(
            metadataOnly.version.content == new.version.content && metadataOnly.version.metadata != new.version.metadata
        )
    }

    @Test func anchorsExpireWhenTheLogIsTrimmed() async throws {
        let remote = InMemoryProvider()
        let changes = try await remote.enumerator(for: .workingSet)
        let anchor = try #require(try await changes.currentSyncAnchor())
        try remote.addFile(path: "one", text: "1")
        try remote.addFile(path: "two", text: "2")
        let batch = try await changes.enumerateChanges(from: anchor, suggestedPageSize: 1)
        #expect(batch.updated.map(\.filename) == ["one"] && batch.moreComing)
        remote.trimChangeLog(keepingLast: 1)
        #expect(
            try await changes.enumerateChanges(from: batch.nextAnchor, suggestedPageSize: 10).updated.map(\.filename)
                == ["two"])
        await #expect(throws: ProviderError.syncAnchorExpired) {
            try await changes.enumerateChanges(from: anchor, suggestedPageSize: 10)
        }
        #expect(try await InMemoryProvider().enumerator(for: .workingSet).currentSyncAnchor() != anchor)
    }

    @Test func aLimitedLogExpiresOldAnchorsByItself() async throws {
        let remote = InMemoryProvider(configuration: .init(changeLogLimit: 2))
        let changes = try await remote.enumerator(for: .workingSet)
        let anchor = try #require(try await changes.currentSyncAnchor())
        for index in 0..<3 { try remote.addFile(path: "f\(index)", text: "") }
        await #expect(throws: ProviderError.syncAnchorExpired) {
            try await changes.enumerateChanges(from: anchor, suggestedPageSize: 10)
        }
    }

    @Test func pagesExpireOnDemand() async throws {
        let remote = InMemoryProvider(configuration: .init(pageSize: 1))
        for index in 0..<3 { try remote.addFile(path: "f\(index)", text: "") }
        let listing = try await remote.enumerator(for: .rootContainer)
        let first = try await listing.enumerateItems(startingAt: .initial, suggestedPageSize: 100)
        let next = try #require(first.nextPage)
        remote.expirePages()
        await #expect(throws: ProviderError.pageExpired) {
            try await listing.enumerateItems(startingAt: next, suggestedPageSize: 100)
        }
    }

    @Test func withoutChangeEnumerationTheSuiteSkipsThatCheck() async throws {
        let remote = InMemoryProvider(configuration: .init(supportsChangeEnumeration: false))
        try ConformanceFixture.standard.add(to: remote)
        let suite = ProviderConformance(provider: remote) { try $0.apply(to: remote) }
        #expect(try await suite.checkChangeEnumeration() == .skipped(reason: "the working set has no sync anchor"))
    }

    @Test func builderRefusesTakenNamesAndMissingPaths() throws {
        let remote = InMemoryProvider()
        try remote.addFile(path: "taken", text: "x")
        #expect(throws: ProviderError.filenameCollision(existing: remote.item(atPath: "taken")?.identifier)) {
            try remote.addDirectory(path: "taken")
        }
        #expect(throws: ProviderError.self) { try remote.setContents(path: "missing", []) }
        let odd = try remote.add(.file([1]), named: Filename(bytes: [0x66, 0xFF]), in: .rootContainer)
        #expect(remote.contents(of: odd.identifier) == [1])
    }
}
