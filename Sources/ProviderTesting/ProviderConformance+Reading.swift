import FileProviderKit

/// The read-half checks: listings, paging, lookups, contents, versions, partial fetches and
/// unknown identifiers, all against the fixture as it was put on the remote.
extension ProviderConformance {
    func verifyTreeListing() async throws -> ConformanceOutcome {
        let listed = try await walk()
        for entry in fixture.entries where entry.parentPath != ConformanceFixture.scratchPath {
            guard let item = listed[entry.path] else { throw Violation(message: "\(entry.path) is not listed") }
            switch entry.node {
            case .file(let contents):
                try expect(item.kind == .file, "\(entry.path) is listed as a \(item.kind), not a file")
                try expect(
                    item.size == UInt64(contents.count), "\(entry.path) has size \(item.size), not \(contents.count)")
            case .directory:
                try expect(item.kind == .directory, "\(entry.path) is listed as a \(item.kind), not a directory")
            case .symlink(let target):
                try expect(item.kind == .symlink, "\(entry.path) is listed as a \(item.kind), not a symlink")
                try expect(
                    item.symlinkTarget == Array(target.utf8),
                    "\(entry.path) points at \(item.symlinkTarget.map { String(decoding: $0, as: UTF8.self) } ?? "nothing"), not \(target)"
                )
            }
            try expect(
                (item.kind == .symlink) == (item.symlinkTarget != nil),
                "\(entry.path): symlinkTarget must be set exactly for symlinks")
        }
        let extra = listed.keys.filter { path in
            fixture.entry(atPath: path) == nil && !path.hasPrefix(ConformanceFixture.scratchPath + "/")
        }
        try expect(extra.isEmpty, "listed items that are not in the fixture: \(extra.sorted())")
        for (path, item) in listed {
            try expect(item.filename.isValid, "\(path) has a filename Linux cannot show")
        }
        return .passed
    }

    func verifyPaging() async throws -> ConformanceOutcome {
        for container in ["", ConformanceFixture.crowdedPath] {
            let identifier = container.isEmpty ? .rootContainer : try await resolve(container).identifier
            let expected = Set(fixture.children(ofPath: container).map(\.name))
            for size in pageSizes {
                let items = try await list(identifier, pageSize: size)
                let names = items.map(\.filename.description)
                try expect(
                    Set(items.map(\.identifier)).count == items.count,
                    "listing \"\(container)\" with page size \(size) repeated items")
                try expect(
                    Set(names) == expected,
                    "listing \"\(container)\" with page size \(size) gave \(items.count) items; missing \(expected.subtracting(names).sorted()), unexpected \(Set(names).subtracting(expected).sorted())"
                )
            }
        }
        let enumerator = try await attempt("enumerator(for: root)") {
            try await provider.enumerator(for: .rootContainer)
        }
        let foreign = try EnumerationPage("fpfs-conformance: a page this provider never handed out")
        try await expectError(
            "enumerateItems(startingAt: a foreign page)", "pageExpired", matching: { $0 == .pageExpired }
        ) {
            _ = try await enumerator.enumerateItems(startingAt: foreign, suggestedPageSize: 10)
        }
        return .passed
    }

    func verifyWorkingSetListing() async throws -> ConformanceOutcome {
        let items: [Item]
        do { items = try await list(.workingSet, pageSize: 7) } catch let violation as Violation
            where violation.isUnsupported
        {
            return .skipped(reason: "the working set cannot be listed")
        }
        let identifiers = items.map(\.identifier)
        try expect(Set(identifiers).count == identifiers.count, "the working set listing repeats items")
        let missing = try await walk().filter { !identifiers.contains($0.value.identifier) }.keys
        try expect(missing.isEmpty, "the working set listing lacks \(missing.sorted())")
        return .passed
    }

    func verifyItemLookup() async throws -> ConformanceOutcome {
        let root = try await attempt("item(for: root)") { try await provider.item(for: .rootContainer) }
        try expect(root.identifier == .rootContainer, "item(for: root) has identifier \(root.identifier)")
        try expect(root.kind == .directory, "item(for: root) is a \(root.kind)")
        for (path, listed) in try await walk() {
            let looked = try await attempt("item(for: \(listed.identifier)) of \(path)") {
                try await provider.item(for: listed.identifier)
            }
            let fields: [(String, Bool)] = [
                ("identifier", looked.identifier == listed.identifier),
                ("parentIdentifier", looked.parentIdentifier == listed.parentIdentifier),
                ("filename", looked.filename == listed.filename), ("kind", looked.kind == listed.kind),
                ("size", looked.size == listed.size), ("version", looked.version == listed.version),
                ("symlinkTarget", looked.symlinkTarget == listed.symlinkTarget),
            ]
            for (field, agrees) in fields {
                try expect(agrees, "item(for:) of \(path) disagrees with its listing on \(field)")
            }
        }
        return .passed
    }

    func verifyParentIdentifiers() async throws -> ConformanceOutcome {
        let listed = try await walk()
        for (path, item) in listed {
            let parentPath = String(path.split(separator: "/").dropLast().joined(separator: "/"))
            let parent = parentPath.isEmpty ? .rootContainer : listed[parentPath]?.identifier
            try expect(
                item.parentIdentifier == parent,
                "\(path) names \(item.parentIdentifier) as parent, but was listed in \(parent?.rawValue ?? "?")")
        }
        return .passed
    }

    func verifyContents() async throws -> ConformanceOutcome {
        let listing = try await walk()
        for (path, contents) in fixtureFiles {
            guard let listed = listing[path] else { throw Violation(message: "\(path) is not listed") }
            let (item, bytes) = try await fetch(listed.identifier)
            try expect(item.identifier == listed.identifier, "fetching \(path) returned item \(item.identifier)")
            try expect(
                bytes == contents, "fetching \(path) gave \(bytes.count) bytes unlike the fixture's \(contents.count)")
            let again = try await fetch(listed.identifier, version: listed.version)
            try expect(again.bytes == contents, "fetching \(path) at its listed version gave other bytes")
        }
        return .passed
    }

    func verifyVersionStability() async throws -> ConformanceOutcome {
        let first = try await walk()
        let second = try await walk()
        for (path, item) in first {
            try expect(second[path]?.version == item.version, "\(path) changed version while nothing changed")
            let looked = try await attempt("item(for: \(path))") { try await provider.item(for: item.identifier) }
            try expect(looked.version == item.version, "item(for:) of \(path) reports another version than listed")
            if item.kind == .file {
                let fetched = try await fetch(item.identifier)
                try expect(
                    fetched.item.version == item.version, "fetching \(path) returned another version than listed")
            }
        }
        return .passed
    }

    func verifyPartialFetch() async throws -> ConformanceOutcome {
        guard let partial = provider as? any PartialContentFetching else {
            return .skipped(reason: "the provider does not fetch partial contents")
        }
        for path in [ConformanceFixture.largeFilePath, ConformanceFixture.emptyFilePath, "docs/readme.txt"] {
            guard case .file(let contents) = fixture.entry(atPath: path)?.node else { continue }
            let item = try await resolve(path)
            let size = UInt64(contents.count)
            for alignment in alignments {
                let ranges: [Range<UInt64>] = [
                    0..<1, 0..<alignment, alignment - 1..<alignment + 1, size / 2..<size / 2 + 5000,
                    size.saturatingSubtract(1)..<size, size.saturatingSubtract(10)..<size + 10, size + 5..<size + 500,
                    0..<size,
                ]
                for wanted in ranges {
                    try await verifyPartialFetch(
                        of: item, path: path, contents: contents, range: wanted, alignment: alignment, with: partial)
                }
            }
        }
        return .passed
    }

    private func verifyPartialFetch(
        of item: Item, path: String, contents: [UInt8], range wanted: Range<UInt64>, alignment: UInt64,
        with partial: any PartialContentFetching
    ) async throws {
        let call = "fetchPartialContents(\(path), minimalRange: \(wanted), aligningTo: \(alignment))"
        let sink = MemorySink()
        let result = try await attempt(call) {
            try await partial.fetchPartialContents(
                for: item.identifier, version: item.version, minimalRange: wanted, aligningTo: alignment, options: [],
                into: sink)
        }
        sink.finish()
        let size = UInt64(contents.count)
        let retrieved = result.retrievedRange
        try expect(sink.violations.isEmpty, "\(call) broke the sink contract: \(sink.violations)")
        try expect(
            result.isValid(minimalRange: wanted, alignment: alignment, size: size),
            "\(call) returned \(retrieved), which breaks the alignment contract for a file of \(size) bytes")
        try expect(
            sink.writtenRanges == (retrieved.isEmpty ? [] : [retrieved]),
            "\(call) said it retrieved \(retrieved) but wrote \(sink.writtenRanges)")
        try expect(
            sink.bytes(in: retrieved) == Array(contents[Int(retrieved.lowerBound)..<Int(retrieved.upperBound)]),
            "\(call) wrote bytes that differ from the fixture")
        try expect(result.item.identifier == item.identifier, "\(call) returned item \(result.item.identifier)")
        try expect(result.item.version == item.version, "\(call) returned another version of an unchanged file")
    }

    func verifyUnknownIdentifier() async throws -> ConformanceOutcome {
        let unknown = ItemIdentifier("fpfs-conformance-no-such-item")
        let isNoSuchItem: (ProviderError) -> Bool = { if case .noSuchItem = $0 { true } else { false } }
        try await expectError("item(for: unknown)", "noSuchItem", matching: isNoSuchItem) {
            _ = try await provider.item(for: unknown)
        }
        try await expectError("fetchContents(unknown)", "noSuchItem", matching: isNoSuchItem) {
            _ = try await provider.fetchContents(for: unknown, version: nil, into: MemorySink())
        }
        try await expectError("enumerating unknown", "noSuchItem", matching: isNoSuchItem) {
            let enumerator = try await provider.enumerator(for: unknown)
            _ = try await enumerator.enumerateItems(startingAt: .initial, suggestedPageSize: 10)
        }
        if let partial = provider as? any PartialContentFetching {
            try await expectError("fetchPartialContents(unknown)", "noSuchItem", matching: isNoSuchItem) {
                _ = try await partial.fetchPartialContents(
                    for: unknown, version: ItemVersion(content: [], metadata: []), minimalRange: 0..<1,
                    aligningTo: 4096, options: [], into: MemorySink())
            }
        }
        return .passed
    }
}

extension UInt64 {
    /// `self - other`, stopping at zero, for ranges near the start of small files.
    fileprivate func saturatingSubtract(_ other: UInt64) -> UInt64 { self > other ? self - other : 0 }
}
