import FileProviderKit
import Foundation
import LocalProvider
import ProviderTesting
import Testing

/// LocalProvider must pass the suite every provider runs, on the fixture put into a folder and
/// with the suite changing that folder directly as another client would.
@Suite struct ConformanceTests {
    /// The standard fixture in a fresh folder, and the suite wired to a provider on it.
    static func suite(pageSizes: [Int]? = nil) async throws -> (ProviderConformance, TestFolder) {
        let folder = try TestFolder()
        try await ConformanceFixture.standard.materialize(in: folder.url)
        var suite = ProviderConformance(provider: try folder.provider()) { [url = folder.url] mutation in
            try await mutation.apply(inDirectory: url)
        }
        if let pageSizes { suite.pageSizes = pageSizes }
        return (suite, folder)
    }

    @Test(arguments: ConformanceCheck.allCases)
    func check(_ check: ConformanceCheck) async throws {
        let (suite, folder) = try await Self.suite()
        #expect(try await suite.check(check) == .passed)
        withExtendedLifetime(folder) {}
    }

    @Test func wholeSuiteOnOneFolder() async throws {
        let (suite, folder) = try await Self.suite(pageSizes: [1, 2, 5, 500])
        let report = await suite.run()
        #expect(report.passed, "\(report)")
        #expect(report.skipped.isEmpty, "\(report)")
        withExtendedLifetime(folder) {}
    }
}
