import FileProviderKit
import Foundation

/// Proves that a provider keeps the FileProviderKit contract, independent of any test framework:
/// a provider author puts `fixture` on the remote, hands the suite the provider (and, for the
/// checks that need the remote to change behind the provider's back, a way to change it), and
/// either runs everything with `run()` or one check at a time with `check(_:)` or the `check…`
/// methods, which throw a `ConformanceFailure` naming what was wrong.
///
/// Checks that change the remote work only inside the fixture's `scratch` directory, on names of
/// their own, and clean up after themselves, so checks may run in any order on one remote.
public struct ProviderConformance: Sendable {
    /// Makes a change on the remote as another client would, then returns once the provider can
    /// see it.
    public typealias Mutator = @Sendable (ConformanceMutation) async throws -> Void

    public let provider: any FileProvider
    public let fixture: ConformanceFixture
    /// Nil skips the checks that need the remote to change underneath the provider.
    public let mutate: Mutator?
    /// The suggested page sizes `paging` lists with; small ones force many pages.
    public var pageSizes: [Int] = [1, 3, 7, 100]
    /// The alignments `partialFetch` asks for.
    public var alignments: [UInt64] = [4096, 65_536, 1 << 20]

    public init(provider: any FileProvider, fixture: ConformanceFixture = .standard, mutate: Mutator? = nil) {
        self.provider = provider
        self.fixture = fixture
        self.mutate = mutate
    }

    /// Runs every check in order and reports each outcome; a failing check does not stop the rest.
    public func run() async -> ConformanceReport {
        var report = ConformanceReport()
        for check in ConformanceCheck.allCases {
            let outcome: ConformanceOutcome
            do { outcome = try await self.check(check) } catch let failure as ConformanceFailure {
                outcome = .failed(failure)
            } catch {
                outcome = .failed(ConformanceFailure(check: check, message: "\(error)"))
            }
            report.outcomes.append((check, outcome))
        }
        return report
    }

    /// Runs one check: returns `.passed` or `.skipped`, or throws a `ConformanceFailure`.
    @discardableResult
    public func check(_ check: ConformanceCheck) async throws -> ConformanceOutcome {
        do {
            switch check {
            case .treeListing: return try await verifyTreeListing()
            case .paging: return try await verifyPaging()
            case .workingSetListing: return try await verifyWorkingSetListing()
            case .itemLookup: return try await verifyItemLookup()
            case .parentIdentifiers: return try await verifyParentIdentifiers()
            case .contents: return try await verifyContents()
            case .versionStability: return try await verifyVersionStability()
            case .contentVersionChange: return try await verifyContentVersionChange()
            case .partialFetch: return try await verifyPartialFetch()
            case .strictVersioning: return try await verifyStrictVersioning()
            case .unknownIdentifier: return try await verifyUnknownIdentifier()
            case .changeEnumeration: return try await verifyChangeEnumeration()
            case .createItems: return try await verifyCreateItems()
            case .modifyItem: return try await verifyModifyItem()
            case .staleBaseVersion: return try await verifyStaleBaseVersion()
            case .filenameCollision: return try await verifyFilenameCollision()
            case .deleteItems: return try await verifyDeleteItems()
            }
        } catch let violation as Violation {
            throw ConformanceFailure(check: check, message: violation.message)
        } catch {
            throw ConformanceFailure(check: check, message: "unexpected error: \(error)")
        }
    }

    // MARK: One method per check, for tests that call them by name

    /// See `ConformanceCheck.treeListing`.
    @discardableResult public func checkTreeListing() async throws -> ConformanceOutcome {
        try await check(.treeListing)
    }
    /// See `ConformanceCheck.paging`.
    @discardableResult public func checkPaging() async throws -> ConformanceOutcome { try await check(.paging) }
    /// See `ConformanceCheck.workingSetListing`.
    @discardableResult public func checkWorkingSetListing() async throws -> ConformanceOutcome {
        try await check(.workingSetListing)
    }
    /// See `ConformanceCheck.itemLookup`.
    @discardableResult public func checkItemLookup() async throws -> ConformanceOutcome {
        try await check(.itemLookup)
    }
    /// See `ConformanceCheck.parentIdentifiers`.
    @discardableResult public func checkParentIdentifiers() async throws -> ConformanceOutcome {
        try await check(.parentIdentifiers)
    }
    /// See `ConformanceCheck.contents`.
    @discardableResult public func checkContents() async throws -> ConformanceOutcome { try await check(.contents) }
    /// See `ConformanceCheck.versionStability`.
    @discardableResult public func checkVersionStability() async throws -> ConformanceOutcome {
        try await check(.versionStability)
    }
    /// See `ConformanceCheck.contentVersionChange`.
    @discardableResult public func checkContentVersionChange() async throws -> ConformanceOutcome {
        try await check(.contentVersionChange)
    }
    /// See `ConformanceCheck.partialFetch`.
    @discardableResult public func checkPartialFetch() async throws -> ConformanceOutcome {
        try await check(.partialFetch)
    }
    /// See `ConformanceCheck.strictVersioning`.
    @discardableResult public func checkStrictVersioning() async throws -> ConformanceOutcome {
        try await check(.strictVersioning)
    }
    /// See `ConformanceCheck.unknownIdentifier`.
    @discardableResult public func checkUnknownIdentifier() async throws -> ConformanceOutcome {
        try await check(.unknownIdentifier)
    }
    /// See `ConformanceCheck.changeEnumeration`.
    @discardableResult public func checkChangeEnumeration() async throws -> ConformanceOutcome {
        try await check(.changeEnumeration)
    }
    /// See `ConformanceCheck.createItems`.
    @discardableResult public func checkCreateItems() async throws -> ConformanceOutcome {
        try await check(.createItems)
    }
    /// See `ConformanceCheck.modifyItem`.
    @discardableResult public func checkModifyItem() async throws -> ConformanceOutcome {
        try await check(.modifyItem)
    }
    /// See `ConformanceCheck.staleBaseVersion`.
    @discardableResult public func checkStaleBaseVersion() async throws -> ConformanceOutcome {
        try await check(.staleBaseVersion)
    }
    /// See `ConformanceCheck.filenameCollision`.
    @discardableResult public func checkFilenameCollision() async throws -> ConformanceOutcome {
        try await check(.filenameCollision)
    }
    /// See `ConformanceCheck.deleteItems`.
    @discardableResult public func checkDeleteItems() async throws -> ConformanceOutcome {
        try await check(.deleteItems)
    }
}
