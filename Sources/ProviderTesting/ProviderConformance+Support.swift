import FileProviderKit
import Foundation

/// What the checks share: listing with page checks, walking the fixture, resolving paths,
/// fetching into a checked sink, creating scratch items, and turning provider errors into
/// messages that say which call failed.
extension ProviderConformance {
    /// A broken expectation inside a check; `check(_:)` adds the check's name.
    struct Violation: Error {
        let message: String
        /// The provider's error when a call threw, so a check can tell an unsupported feature.
        var underlying: (any Error)?

        /// True when the provider said it does not do this at all.
        var isUnsupported: Bool {
            if case .featureUnsupported? = underlying as? ProviderError { true } else { false }
        }
    }

    func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw Violation(message: message()) }
    }

    /// Runs a provider call; an error it throws becomes a violation naming the call.
    func attempt<T>(_ call: String, _ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let violation as Violation { throw violation } catch {
            throw Violation(message: "\(call) threw \(error)", underlying: error)
        }
    }

    /// Runs a provider call that must throw a particular `ProviderError`.
    func expectError(
        _ call: String, _ expected: String, matching matches: (ProviderError) -> Bool, _ body: () async throws -> Void
    ) async throws {
        do { try await body() } catch {
            let providerError = error as? ProviderError ?? (error as? Violation)?.underlying as? ProviderError
            if let providerError, matches(providerError) { return }
            throw Violation(
                message: "\(call) threw \(providerError.map { "\($0)" } ?? "\(error)"), expected \(expected)")
        }
        throw Violation(message: "\(call) succeeded, expected \(expected)")
    }

    /// Applies a mutation through the test's hook.
    func change(_ mutation: ConformanceMutation, with mutate: Mutator) async throws {
        try await attempt("the test's mutate hook (\(mutation))") { try await mutate(mutation) }
    }

    // MARK: Listing

    /// Every item of a container, page by page, checking page sizes and page tokens on the way.
    func list(_ container: ItemIdentifier, pageSize: Int = 100) async throws -> [Item] {
        let enumerator = try await attempt("enumerator(for: \(container))") {
            try await provider.enumerator(for: container)
        }
        var page = EnumerationPage.initial
        var seenPages: Set<EnumerationPage> = []
        var items: [Item] = []
        while true {
            let call = "enumerateItems(\(container), suggestedPageSize: \(pageSize))"
            let result = try await attempt(call) {
                try await enumerator.enumerateItems(startingAt: page, suggestedPageSize: pageSize)
            }
            try expect(
                result.items.count <= pageSize * 100,
                "\(call) returned \(result.items.count) items; the contract allows at most 100 × the suggestion")
            items += result.items
            guard let next = result.nextPage else { return items }
            try expect(!next.isInitial, "\(call) returned the initial page as next page; end a listing with nil")
            try expect(seenPages.insert(next).inserted, "\(call) handed out the same page twice: the listing loops")
            page = next
        }
    }

    /// The path of a child of the directory at `path`.
    func path(_ name: Filename, in path: String) -> String {
        path.isEmpty ? name.description : "\(path)/\(name)"
    }

    /// Every listed item by path, walking the fixture's directories (not inside `scratch`).
    func walk() async throws -> [String: Item] {
        var items: [String: Item] = [:]
        var pending: [(path: String, identifier: ItemIdentifier)] = [("", .rootContainer)]
        while let (directory, identifier) = pending.popLast() {
            for child in try await list(identifier) {
                let childPath = path(child.filename, in: directory)
                items[childPath] = child
                if child.kind == .directory, childPath != ConformanceFixture.scratchPath,
                    fixture.entry(atPath: childPath)?.node == .directory
                {
                    pending.append((childPath, child.identifier))
                }
            }
        }
        return items
    }

    /// The item at a path, found by listing each directory on the way, as the engine would.
    func resolve(_ path: String) async throws -> Item {
        var current = ItemIdentifier.rootContainer
        var found: Item?
        for name in path.split(separator: "/").map({ Filename(String($0)) }) {
            guard let child = try await list(current).first(where: { $0.filename == name }) else {
                throw Violation(message: "\(path) is not listed (no \(name) in \(current))")
            }
            found = child
            current = child.identifier
        }
        guard let found else { throw Violation(message: "empty path") }
        return found
    }

    /// The fixture's files with their expected bytes.
    var fixtureFiles: [(path: String, contents: [UInt8])] {
        fixture.entries.compactMap { entry in
            if case .file(let contents) = entry.node { (entry.path, contents) } else { nil }
        }
    }

    // MARK: Content

    /// Fetches a whole file into a checked sink: one run from offset 0, as long as the returned size.
    func fetch(_ identifier: ItemIdentifier, version: ItemVersion? = nil) async throws -> (item: Item, bytes: [UInt8]) {
        let sink = MemorySink()
        let call = "fetchContents(\(identifier))"
        let item = try await attempt(call) {
            try await provider.fetchContents(for: identifier, version: version, into: sink)
        }
        sink.finish()
        try expect(sink.violations.isEmpty, "\(call) broke the sink contract: \(sink.violations)")
        let ranges = sink.writtenRanges
        try expect(
            ranges.count <= 1 && ranges.first?.lowerBound ?? 0 == 0, "\(call) wrote \(ranges), not one run from 0")
        let bytes = sink.contents
        try expect(
            UInt64(bytes.count) == item.size, "\(call) wrote \(bytes.count) bytes for an item of size \(item.size)")
        return (item, bytes)
    }

    // MARK: Scratch items

    /// A name of this check's own in the scratch directory.
    func scratchName(_ check: ConformanceCheck, _ suffix: String) -> String {
        "\(check)-\(UUID().uuidString.prefix(8))-\(suffix)"
    }

    /// Creates an item in `parent` through the write half, like the engine replaying a local create.
    func create(
        _ name: String, _ kind: ItemKind, in parent: ItemIdentifier, contents: [UInt8] = [], target: String? = nil
    ) async throws -> Item {
        let template = Item(
            identifier: ItemIdentifier("fpfs-conformance-local-\(UUID().uuidString)"), parentIdentifier: parent,
            filename: Filename(name), kind: kind,
            size: UInt64(kind == .symlink ? target?.utf8.count ?? 0 : contents.count),
            contentModificationDate: Timestamp.now, version: ItemVersion(content: [], metadata: []),
            symlinkTarget: target.map { Array($0.utf8) })
        let fields: ItemFields =
            switch kind {
            case .file: [.contents, .contentModificationDate, .permissions]
            case .directory: [.contentModificationDate, .permissions]
            case .symlink: [.symlinkTarget, .contentModificationDate]
            }
        return try await withContents(kind == .file ? contents : nil) { url in
            try await attempt("createItem(\(kind) \(name))") {
                try await provider.createItem(basedOn: template, fields: fields, contents: url, options: [])
            }
        }
    }

    /// Replaces a file's contents through the write half.
    func modifyContents(of item: Item, to contents: [UInt8], baseVersion: ItemVersion) async throws -> Item {
        var changed = item
        changed.size = UInt64(contents.count)
        changed.contentModificationDate = Timestamp.now
        return try await withContents(contents) { url in
            try await provider.modifyItem(
                changed, baseVersion: baseVersion, changedFields: [.contents, .contentModificationDate], contents: url,
                options: [])
        }
    }

    /// Deletes a scratch item at the end of a check; a failure here is the check's failure.
    func cleanUp(_ item: Item) async throws {
        try await attempt("deleteItem(\(item.identifier)) while cleaning up") {
            try await provider.deleteItem(identifier: item.identifier, baseVersion: nil, options: .recursive)
        }
    }

    /// Hands `body` a temporary file holding `contents` (nil for none), removed afterwards.
    func withContents<T>(_ contents: [UInt8]?, _ body: (URL?) async throws -> T) async throws -> T {
        guard let contents else { return try await body(nil) }
        let url = FileManager.default.temporaryDirectory.appending(path: "fpfs-conformance-\(UUID().uuidString)")
        try await BlockingIO.run { try Data(contents).write(to: url) }
        let result: Result<T, any Error>
        do { result = .success(try await body(url)) } catch { result = .failure(error) }
        _ = try? await BlockingIO.run { try FileManager.default.removeItem(at: url) }
        return try result.get()
    }
}
