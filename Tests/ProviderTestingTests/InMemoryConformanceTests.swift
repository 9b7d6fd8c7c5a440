import FileProviderKit
import ProviderTesting
import Testing

/// InMemoryProvider is the reference the conformance suite is proven against: every check must
/// pass, with the engine's usual page sizes and with tiny fixed ones.
@Suite struct InMemoryConformanceTests {
    /// A fresh remote holding the standard fixture, with the suite wired to change it directly.
    static func suite(configuration: InMemoryProvider.Configuration = .init()) throws -> ProviderConformance {
        let provider = InMemoryProvider(configuration: configuration)
        try ConformanceFixture.standard.add(to: provider)
        return ProviderConformance(provider: provider) { try $0.apply(to: provider) }
    }

    @Test(arguments: ConformanceCheck.allCases)
    func check(_ check: ConformanceCheck) async throws {
        #expect(try await Self.suite().check(check) == .passed)
    }

    @Test(arguments: [1, 2, 5])
    func wholeSuiteWithFixedSmallPages(pageSize: Int) async throws {
        let report = try await Self.suite(configuration: .init(pageSize: pageSize, writeChunkSize: 4096)).run()
        #expect(report.passed, "\(report)")
        #expect(report.skipped.isEmpty, "\(report)")
    }

    @Test func changeChecksSkipWithoutAMutateHook() async throws {
        let provider = InMemoryProvider()
        try ConformanceFixture.standard.add(to: provider)
        let report = await ProviderConformance(provider: provider).run()
        #expect(report.passed, "\(report)")
        #expect(Set(report.skipped) == [.contentVersionChange, .strictVersioning, .changeEnumeration])
    }

    @Test func aBrokenProviderFailsWithTheCheckNamed() async throws {
        let provider = InMemoryProvider()
        try ConformanceFixture.standard.add(to: provider)
        try provider.setContents(path: "docs/readme.txt", Array("tampered".utf8))
        let suite = ProviderConformance(provider: provider)
        await #expect(throws: ConformanceFailure.self) { try await suite.checkContents() }
        let report = await suite.run()
        #expect(report.failures.map(\.check).contains(.treeListing))
    }
}
