import Testing

/// Compares two listings line by line as bytes (String equality would let NFC and NFD names pass
/// as equal) and records one issue that shows the lines only one side has.
enum LineComparison {
    static func expectEqual(
        _ actual: [String], _ expected: [String], _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let same = actual.count == expected.count && zip(actual, expected).allSatisfy { $0.utf8.elementsEqual($1.utf8) }
        guard !same else { return }
        let actualBytes = Set(actual.map { Array($0.utf8) })
        let expectedBytes = Set(expected.map { Array($0.utf8) })
        let missing = expected.filter { !actualBytes.contains(Array($0.utf8)) }
        let extra = actual.filter { !expectedBytes.contains(Array($0.utf8)) }
        let show = { (lines: [String]) in
            lines.prefix(25).map { "    " + $0.debugDescription }.joined(separator: "\n")
                + (lines.count > 25 ? "\n    … \(lines.count - 25) more" : "")
        }
        var message = "\(what): the mount (\(actual.count) lines) differs from the source (\(expected.count) lines)"
        if !missing.isEmpty { message += "\n  only in the source:\n" + show(missing) }
        if !extra.isEmpty { message += "\n  only on the mount:\n" + show(extra) }
        if missing.isEmpty, extra.isEmpty { message += "\n  (same lines, different order or duplicates)" }
        Issue.record("\(message)", sourceLocation: sourceLocation)
    }
}
