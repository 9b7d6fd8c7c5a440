import FileProviderKit
import Foundation
import ProviderTesting
import Testing

/// Every fault effect against an InMemoryProvider, rules matched by name, identifier and
/// operation, added and removed while calls run, and capabilities kept through the wrapper.
@Suite struct FaultInjectingProviderTests {
    let remote = InMemoryProvider()
    let injector = FaultInjector()
    let good: Item
    let bad: Item

    init() throws {
        good = try remote.addFile(path: "docs/good.txt", text: "good contents")
        bad = try remote.addFile(path: "docs/bad.txt", text: "bad contents")
    }

    var provider: FaultInjectingProvider<InMemoryProvider> {
        FaultInjectingProvider(wrapping: remote, injector: injector)
    }

    /// Waits until `count` calls hang, so a test acts on a call that is really stuck. The bound is
    /// generous: a call that never hangs fails either way, and under the whole suite's start on two
    /// cores the first poll once came 7 s late.
    func waitForHangingCalls(_ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while injector.hangingCalls < count {
            try #require(ContinuousClock.now < deadline, "no call started hanging")
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test func errorsHitOnlyTheNamedFileAndOperation() async throws {
        injector.add(try FaultRule(parsing: "error=serverUnreachable:fetch:bad.txt"))
        await #expect(throws: ProviderError.serverUnreachable(reason: "injected fault")) {
            try await provider.fetchContents(for: bad.identifier, version: nil, into: MemorySink())
        }
        let sink = MemorySink()
        _ = try await provider.fetchContents(for: good.identifier, version: nil, into: sink)
        #expect(sink.contents == Array("good contents".utf8))
        _ = try await provider.item(for: bad.identifier)
        #expect(remote.recorder.count(.fetchContents) == 1, "the failed fetch never reached the remote")
    }

    @Test func namesAreLearnedFromListingsWithoutExtraLookups() async throws {
        injector.add(FaultRule(.error(.notAuthenticated(reason: "x")), on: .item, for: .filename("bad.txt")))
        let docs = try #require(remote.item(atPath: "docs"))
        _ = try await provider.enumerator(for: docs.identifier).enumerateItems(
            startingAt: .initial, suggestedPageSize: 10)
        await #expect(throws: ProviderError.self) { try await provider.item(for: bad.identifier) }
        #expect(remote.recorder.count(.item) == 0)
    }

    @Test func hangIsCancelledPromptly() async throws {
        injector.add(FaultRule(.hang, on: .fetch))
        let fetch = Task { [provider, bad] in
            try await provider.fetchContents(for: bad.identifier, version: nil, into: MemorySink())
        }
        try await waitForHangingCalls(1)
        let cancelled = ContinuousClock.now
        fetch.cancel()
        await #expect(throws: CancellationError.self) { try await fetch.value }
        // A hang never ends, so any bound shows the cancellation ended it; CI's two busy cores once took 3.5 s.
        #expect(ContinuousClock.now - cancelled < .seconds(30))
        #expect(injector.hangingCalls == 0)
    }

    @Test func aCallCancelledBeforeItHangsDoesNotHang() async throws {
        injector.add(FaultRule(.hang, on: .item))
        let lookup = Task { [provider, good] in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await provider.item(for: good.identifier)
        }
        await #expect(throws: CancellationError.self) { try await lookup.value }
    }

    @Test func removingTheRuleBringsTheServerBack() async throws {
        let rule = injector.add(FaultRule(.hang, on: .any))
        let fetch = Task { [provider, good] in
            let sink = MemorySink()
            _ = try await provider.fetchContents(for: good.identifier, version: nil, into: sink)
            return sink.contents
        }
        try await waitForHangingCalls(1)
        injector.remove(rule)
        #expect(try await fetch.value == Array("good contents".utf8))
        #expect(injector.rules.isEmpty)
        _ = try await provider.item(for: good.identifier)
    }

    @Test func delayWaitsThenGoesAhead() async throws {
        injector.add(FaultRule(.delay(.seconds(3)), on: .item, for: .identifier(good.identifier)))
        let start = ContinuousClock.now
        _ = try await provider.item(for: good.identifier)
        #expect(ContinuousClock.now - start >= .seconds(3))
        let quick = ContinuousClock.now
        _ = try await provider.item(for: bad.identifier)
        #expect(ContinuousClock.now - quick < .seconds(3), "the delay hit a call it does not name")
    }

    @Test func shortContentReturnsNormallyWithFewerBytes() async throws {
        injector.add(FaultRule(.shortContent(bytes: 4), on: .fetch))
        let sink = MemorySink()
        let item = try await provider.fetchContents(for: good.identifier, version: nil, into: sink)
        #expect(sink.contents == Array("good".utf8))
        #expect(item.size == 13)
        let partialSink = MemorySink()
        let result = try await provider.fetchPartialContents(
            for: good.identifier, version: good.version, minimalRange: 0..<13, aligningTo: 4096, options: [],
            into: partialSink)
        #expect(partialSink.byteCount == 4)
        #expect(result.retrievedRange == 0..<13)
    }

    @Test func corruptRangeBreaksTheAlignmentContract() async throws {
        injector.add(FaultRule(.corruptRange, on: .fetch, for: .filename("good.txt")))
        let result = try await provider.fetchPartialContents(
            for: good.identifier, version: good.version, minimalRange: 0..<5, aligningTo: 4096, options: [],
            into: MemorySink())
        #expect(!result.isValid(minimalRange: 0..<5, alignment: 4096, size: 13))
    }

    @Test func limitedRulesFailThenRecover() async throws {
        let rule = injector.add(FaultRule(.error(.serverUnreachable(reason: "flaky")), on: .item, limit: 2))
        for _ in 0..<2 { await #expect(throws: ProviderError.self) { try await provider.item(for: good.identifier) } }
        _ = try await provider.item(for: good.identifier)
        #expect(injector.firedCount(rule) == 2)
    }

    @Test func enumerationRulesMatchTheContainer() async throws {
        injector.add(try FaultRule(parsing: "error=pageExpired:enumerate:docs"))
        let docs = try #require(remote.item(atPath: "docs"))
        let root = try await provider.enumerator(for: .rootContainer)
        #expect(try await root.enumerateItems(startingAt: .initial, suggestedPageSize: 10).items.count == 1)
        let listing = try await provider.enumerator(for: docs.identifier)
        await #expect(throws: ProviderError.pageExpired) {
            try await listing.enumerateItems(startingAt: .initial, suggestedPageSize: 10)
        }
        let changes = try await provider.enumerator(for: .workingSet)
        let anchor = try #require(try await changes.currentSyncAnchor())
        injector.add(FaultRule(.error(.syncAnchorExpired), on: .enumerate))
        await #expect(throws: ProviderError.syncAnchorExpired) {
            try await changes.enumerateChanges(from: anchor, suggestedPageSize: 10)
        }
    }

    @Test func writeOperationsFailByRuleAndRecover() async throws {
        let quota = injector.add(try FaultRule(parsing: "error=insufficientQuota:create"))
        var template = good
        template.filename = "new.txt"
        await #expect(throws: ProviderError.insufficientQuota) {
            try await provider.createItem(basedOn: template, fields: [], contents: nil, options: [])
        }
        injector.remove(quota)
        let created = try await provider.createItem(basedOn: template, fields: [], contents: nil, options: [])
        injector.add(try FaultRule(parsing: "error=conflict:modify:new.txt"))
        await #expect(throws: ProviderError.conflict(remote: nil)) {
            try await provider.modifyItem(
                created, baseVersion: created.version, changedFields: [], contents: nil, options: [])
        }
        injector.add(try FaultRule(parsing: "error=deletionRejected:delete"))
        await #expect(throws: ProviderError.deletionRejected) {
            try await provider.deleteItem(identifier: created.identifier, baseVersion: nil, options: [])
        }
        injector.removeAll()
        try await provider.deleteItem(identifier: created.identifier, baseVersion: nil, options: [])
    }

    /// `hang-after`: the remote makes the change, and the answer hangs until the rule goes.
    @Test func hangAfterCallMakesTheChangeAndHoldsTheAnswer() async throws {
        let rule = injector.add(try FaultRule(parsing: "hang-after:create:late.txt"))
        var template = good
        template.filename = "late.txt"
        let call = Task { try await provider.createItem(basedOn: template, fields: [], contents: nil, options: []) }
        while injector.hangingCalls == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let listed = try await remote.enumerator(for: good.parentIdentifier).enumerateItems(
            startingAt: .initial, suggestedPageSize: 100)
        #expect(listed.items.contains { $0.filename == "late.txt" }, "the change was not made before the hang")
        injector.remove(rule)
        #expect(try await call.value.filename == "late.txt")
    }

    @Test func capabilitiesSurviveWrapping() {
        let wrapped: any FileProvider = injector.wrap(remote)
        #expect(wrapped is any PartialContentFetching)
        #expect(wrapped is any IncrementalContentFetching)
        let erased: any FileProvider = remote
        #expect(injector.wrap(erased) is any PartialContentFetching)
        #expect(!(injector.wrap(WholeFileOnly(inner: remote)) is any PartialContentFetching))
    }

    @Test func aFaultyProviderStillPassesConformanceWithoutRules() async throws {
        let remote = InMemoryProvider()
        try ConformanceFixture.standard.add(to: remote)
        let report = await ProviderConformance(provider: injector.wrap(remote)) { try $0.apply(to: remote) }.run()
        #expect(report.passed, "\(report)")
    }
}

/// A provider without the optional capabilities, to show the wrapper does not invent them.
private struct WholeFileOnly: FileProvider {
    let inner: InMemoryProvider
    func item(for identifier: ItemIdentifier) async throws -> Item { try await inner.item(for: identifier) }
    func enumerator(for container: ItemIdentifier) async throws -> any ItemEnumerator {
        try await inner.enumerator(for: container)
    }
    func fetchContents(for identifier: ItemIdentifier, version: ItemVersion?, into sink: any ContentSink) async throws
        -> Item
    { try await inner.fetchContents(for: identifier, version: version, into: sink) }
    func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions) async throws
        -> Item
    { try await inner.createItem(basedOn: template, fields: fields, contents: contents, options: options) }
    func modifyItem(
        _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?, options: ModifyItemOptions
    ) async throws -> Item {
        try await inner.modifyItem(
            item, baseVersion: baseVersion, changedFields: changedFields, contents: contents, options: options)
    }
    func deleteItem(identifier: ItemIdentifier, baseVersion: ItemVersion?, options: DeleteItemOptions) async throws {
        try await inner.deleteItem(identifier: identifier, baseVersion: baseVersion, options: options)
    }
    func invalidate() async { await inner.invalidate() }
}
