import FileProviderKit
import ProviderTesting
import Testing

/// The `--inject-faults` grammar: what parses, to which rules, and that mistakes are refused with
/// a message naming the rule.
@Suite struct FaultSpecTests {
    @Test func theDocumentedExampleParses() throws {
        let rules = try FaultRule.parse("hang:fetch:big.bin;error=serverUnreachable:fetch:bad.txt")
        #expect(
            rules == [
                FaultRule(.hang, on: .fetch, for: .filename("big.bin")),
                FaultRule(.error(.serverUnreachable(reason: "injected fault")), on: .fetch, for: .filename("bad.txt")),
            ])
    }

    @Test func everyEffectAndOperationParses() throws {
        #expect(try FaultRule(parsing: "delay=250:item") == FaultRule(.delay(.milliseconds(250)), on: .item))
        #expect(try FaultRule(parsing: "short=100:fetch") == FaultRule(.shortContent(bytes: 100), on: .fetch))
        #expect(
            try FaultRule(parsing: "corrupt:fetch:a.bin")
                == FaultRule(.corruptRange, on: .fetch, for: .filename("a.bin")))
        for operation in FaultRule.Operation.allCases {
            #expect(try FaultRule(parsing: "hang:\(operation.rawValue)").operation == operation)
        }
        #expect(try FaultRule(parsing: "hang:fetch:name:with:colons").target == .filename("name:with:colons"))
    }

    @Test(arguments: [
        "noSuchItem", "serverUnreachable", "notAuthenticated", "insufficientQuota", "cannotSynchronize",
        "filenameCollision", "directoryNotEmpty", "deletionRejected", "excludedFromSync", "featureUnsupported",
        "versionNoLongerAvailable", "pageExpired", "syncAnchorExpired", "conflict",
    ])
    func everyProviderErrorNameParses(name: String) throws {
        guard case .error(let error) = try FaultRule(parsing: "error=\(name):any").effect else {
            Issue.record("error=\(name) is not an error effect")
            return
        }
        #expect("\(error)".isEmpty == false)
    }

    @Test(arguments: [
        "", "hang", "hang:", ":fetch", "hang:fetchh", "explode:fetch", "hang=1:fetch", "error:fetch",
        "error=nope:fetch",
        "delay=abc:item", "delay=-5:item", "short=:fetch", "short=-1:fetch", "hang:fetch:", "hang:fetch:a/b",
        "hang:fetch:..", "hang:fetch;", "hang;error=noSuchItem:item",
    ])
    func badSpecsAreRefused(spec: String) {
        #expect(throws: FaultSpecError.self) { try FaultRule.parse(spec) }
    }

    @Test func theMessageNamesTheRuleAndTheGrammar() {
        do {
            _ = try FaultInjector(spec: "hang:fetch;error=bogus:item")
            Issue.record("a bad spec was accepted")
        } catch {
            #expect(error.rule == "error=bogus:item")
            #expect(error.description.contains("unknown error \"bogus\""))
            #expect(error.description.contains("EFFECT:OPERATION[:FILENAME]"))
        }
    }
}
