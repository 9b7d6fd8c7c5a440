import FileProviderKit
import Foundation
import LocalProvider
import ProviderTesting
import Testing

@Suite struct FetchingTests {
    /// Bytes that differ at every position that matters, so a misplaced chunk shows.
    static func pattern(_ count: Int) -> [UInt8] { ConformanceFixture.pattern(count: count, seed: 31) }

    @Test func wholeFetchStreamsEverythingInOrder() async throws {
        let folder = try TestFolder()
        let bytes = Self.pattern(3 * 1024 * 1024 + 17)
        try folder.write("big", bytes)
        let provider = try folder.provider()
        let item = try #require(try await provider.child("big"))
        let sink = CollectingSink()
        let fetched = try await provider.fetchContents(for: item.identifier, version: item.version, into: sink)
        #expect(fetched == item)
        #expect(sink.contents() == bytes)
        #expect(sink.offsets.count == 4)  // 1 MiB chunks
    }

    @Test func emptyFileFetchesNothing() async throws {
        let folder = try TestFolder()
        try folder.write("empty", [])
        let provider = try folder.provider()
        let item = try #require(try await provider.child("empty"))
        let sink = CollectingSink()
        _ = try await provider.fetchContents(for: item.identifier, version: nil, into: sink)
        #expect(sink.contents() == [])
    }

    @Test func fetchingAFolderIsRefused() async throws {
        let folder = try TestFolder()
        try folder.makeDirectory("dir")
        let provider = try folder.provider()
        let directory = try #require(try await provider.child("dir"))
        await #expect(throws: ProviderError.self) {
            try await provider.fetchContents(for: directory.identifier, version: nil, into: CollectingSink())
        }
    }

    @Test(
        arguments: [
            (5000..<5001, 4096, 4096..<8192), (9000..<9500, 4096, 8192..<10_000), (0..<1, 1 << 20, 0..<10_000),
            (4096..<8192, 4096, 4096..<8192), (12_000..<13_000, 4096, 8192..<10_000), (7..<7, 1, 7..<7),
            (0..<10_000, 3, 0..<10_000),
        ] as [(Range<UInt64>, UInt64, Range<UInt64>)])
    func partialFetchReadsTheAlignedCoveringRange(minimal: Range<UInt64>, alignment: UInt64, expected: Range<UInt64>)
        async throws
    {
        let folder = try TestFolder()
        let bytes = Self.pattern(10_000)
        try folder.write("f", bytes)
        let provider = try folder.provider()
        let item = try #require(try await provider.child("f"))
        let sink = CollectingSink()
        let result = try await provider.fetchPartialContents(
            for: item.identifier, version: item.version, minimalRange: minimal, aligningTo: alignment,
            options: .strictVersioning, into: sink)
        #expect(result.retrievedRange == expected)
        #expect(result.isValid(minimalRange: minimal, alignment: alignment, size: 10_000))
        #expect(
            sink.contents(from: expected.lowerBound)
                == Array(bytes[Int(expected.lowerBound)..<Int(expected.upperBound)]))
        #expect(result.item == item)
    }

    @Test func aChangedVersionIsGoneUnderStrictVersioningOnly() async throws {
        let folder = try TestFolder()
        try folder.write("f", [1, 2, 3])
        let provider = try folder.provider()
        let old = try #require(try await provider.child("f"))
        try folder.write("f", [4, 5, 6, 7])

        await #expect(throws: ProviderError.versionNoLongerAvailable) {
            try await provider.fetchPartialContents(
                for: old.identifier, version: old.version, minimalRange: 0..<1, aligningTo: 4096,
                options: .strictVersioning, into: CollectingSink())
        }
        let sink = CollectingSink()
        let partial = try await provider.fetchPartialContents(
            for: old.identifier, version: old.version, minimalRange: 0..<1, aligningTo: 4096, options: [], into: sink)
        #expect(partial.item.version != old.version)
        #expect(sink.contents() == [4, 5, 6, 7])

        let whole = CollectingSink()
        let current = try await provider.fetchContents(for: old.identifier, version: old.version, into: whole)
        #expect(current.version != old.version)
        #expect(whole.contents() == [4, 5, 6, 7])
    }

    @Test func requestDelaySlowsEveryRequest() async throws {
        let folder = try TestFolder()
        try folder.write("f", [1])
        let provider = try folder.provider(.init(requestDelay: .milliseconds(300)))
        let item = try #require(try await provider.child("f"))
        let clock = ContinuousClock()
        #expect(try await clock.measure { _ = try await provider.item(for: item.identifier) } >= .milliseconds(300))
        #expect(
            try await clock.measure {
                _ = try await provider.fetchContents(for: item.identifier, version: nil, into: CollectingSink())
            } >= .milliseconds(300))
    }

    @Test func bandwidthLimitIsSharedByConcurrentFetches() async throws {
        let folder = try TestFolder()
        try folder.write("a", Self.pattern(64 * 1024))
        try folder.write("b", Self.pattern(64 * 1024))
        let provider = try folder.provider(.init(bandwidthLimit: 256 * 1024))
        let a = try #require(try await provider.child("a"))
        let b = try #require(try await provider.child("b"))
        let one = CollectingSink()
        let single = try await ContinuousClock().measure {
            _ = try await provider.fetchContents(for: a.identifier, version: nil, into: one)
        }
        #expect(one.contents() == Self.pattern(64 * 1024))
        #expect(single >= .milliseconds(230))  // 64 KiB at 256 KiB/s is 250 ms
        let both = try await ContinuousClock().measure {
            async let first = provider.fetchContents(for: a.identifier, version: nil, into: CollectingSink())
            async let second = provider.fetchContents(for: b.identifier, version: nil, into: CollectingSink())
            _ = try await (first, second)
        }
        #expect(both >= .milliseconds(480))  // 128 KiB at 256 KiB/s is 500 ms
    }

    @Test func cancellingStopsAFetchPromptly() async throws {
        let folder = try TestFolder()
        try folder.write("slow", Self.pattern(1 << 20))
        let provider = try folder.provider(.init(bandwidthLimit: 64 * 1024))  // 16 s for the whole file
        let item = try #require(try await provider.child("slow"))
        let sink = FirstWriteGate()
        let fetch = Task { try await provider.fetchContents(for: item.identifier, version: nil, into: sink) }
        await sink.firstWriteArrived()
        sink.release()
        try await Task.sleep(for: .milliseconds(300))
        let elapsed = await ContinuousClock().measure {
            fetch.cancel()
            _ = await fetch.result
        }
        await #expect(throws: CancellationError.self) { try await fetch.value }
        // Generous against a loaded machine, yet far below the 16 s the whole fetch would take.
        #expect(elapsed < .seconds(5))
        #expect(sink.writeCount < 16)
    }

    @Test func aFileChangingDuringAFetchIsReported() async throws {
        let folder = try TestFolder()
        try folder.write("f", Self.pattern(256 * 1024))
        let provider = try folder.provider(.init(bandwidthLimit: 256 * 1024))  // about a second
        let item = try #require(try await provider.child("f"))
        let sink = FirstWriteGate()
        let fetch = Task { try await provider.fetchContents(for: item.identifier, version: nil, into: sink) }
        // Change the file while the fetch is surely under way: its first bytes are held until then.
        await sink.firstWriteArrived()
        try folder.write("f", Self.pattern(300 * 1024))
        sink.release()
        await #expect(throws: ProviderError.versionNoLongerAvailable) { try await fetch.value }
    }

    /// A root that goes away once a fetch's bytes are read does not fail the fetch: they came from
    /// the file it opened, and its readers may already have them (a mount test saw `cat` get a
    /// file's bytes and the next open for append find them forgotten).
    @Test func aFetchWhoseBytesAreReadSurvivesTheRootGoingAway() async throws {
        let folder = try TestFolder()
        let bytes = Self.pattern(30)
        try folder.write("f", bytes)
        let provider = try folder.provider()
        let item = try #require(try await provider.child("f"))
        let sink = FirstWriteGate()
        let fetch = Task { try await provider.fetchContents(for: item.identifier, version: item.version, into: sink) }
        await sink.firstWriteArrived()
        let away = folder.path + "-away"
        try FileManager.default.moveItem(atPath: folder.path, toPath: away)
        defer { try? FileManager.default.moveItem(atPath: away, toPath: folder.path) }
        sink.release()
        #expect(try await fetch.value == item)
        await #expect(throws: ProviderError.self) { _ = try await provider.child("f") }
    }
}
