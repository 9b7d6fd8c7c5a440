import FileProviderKit

/// The checks that change the remote behind the provider's back through the test's mutate hook:
/// versions that move, strict versioning, and change enumeration.
extension ProviderConformance {
    func verifyContentVersionChange() async throws -> ConformanceOutcome {
        guard let mutate else { return .skipped(reason: "no mutate hook") }
        let path = "\(ConformanceFixture.scratchPath)/\(scratchName(.contentVersionChange, "a.txt"))"
        let renamed = "\(ConformanceFixture.scratchPath)/\(scratchName(.contentVersionChange, "b.txt"))"
        try await change(.createFile(path: path, contents: Array("first".utf8)), with: mutate)
        let first = try await resolve(path)
        // A different length, so providers versioning by size and time see the change at once.
        let second = Array("the second, longer contents".utf8)
        try await change(.modifyFile(path: path, contents: second), with: mutate)
        let modified = try await resolve(path)
        try expect(modified.version.content != first.version.content, "changing \(path) kept its content version")
        try expect(
            try await fetch(modified.identifier).bytes == second, "fetching \(path) after a change gave old bytes")
        try await change(.renameFile(from: path, to: renamed), with: mutate)
        let moved = try await resolve(renamed)
        try expect(
            moved.version.content == modified.version.content,
            "renaming \(path) changed its content version, which would drop cached bytes needlessly")
        try await change(.deleteFile(path: renamed), with: mutate)
        return .passed
    }

    func verifyStrictVersioning() async throws -> ConformanceOutcome {
        guard let partial = provider as? any PartialContentFetching else {
            return .skipped(reason: "the provider does not fetch partial contents")
        }
        guard let mutate else { return .skipped(reason: "no mutate hook") }
        let path = "\(ConformanceFixture.scratchPath)/\(scratchName(.strictVersioning, "file.bin"))"
        let old = ConformanceFixture.pattern(count: 10_000, seed: 2)
        try await change(.createFile(path: path, contents: old), with: mutate)
        let before = try await resolve(path)
        try await change(
            .modifyFile(path: path, contents: ConformanceFixture.pattern(count: 12_000, seed: 3)), with: mutate)
        let call = "fetchPartialContents(\(path), version: replaced, options: .strictVersioning)"
        let sink = MemorySink()
        do {
            let result = try await partial.fetchPartialContents(
                for: before.identifier, version: before.version, minimalRange: 0..<100, aligningTo: 4096,
                options: .strictVersioning, into: sink)
            // Serving the old bytes is allowed too, for remotes that keep history.
            let retrieved = result.retrievedRange
            try expect(
                result.item.version.content == before.version.content,
                "\(call) returned version \(result.item.version) instead of the one asked for or versionNoLongerAvailable"
            )
            try expect(
                sink.bytes(in: retrieved) == Array(old[Int(retrieved.lowerBound)..<Int(retrieved.upperBound)]),
                "\(call) claimed the old version but wrote other bytes")
        } catch ProviderError.versionNoLongerAvailable {
            try expect(sink.byteCount == 0, "\(call) wrote bytes before throwing versionNoLongerAvailable")
        } catch let violation as Violation {
            throw violation
        } catch {
            throw Violation(message: "\(call) threw \(error), expected versionNoLongerAvailable")
        }
        try await change(.deleteFile(path: path), with: mutate)
        return .passed
    }

    func verifyChangeEnumeration() async throws -> ConformanceOutcome {
        guard let mutate else { return .skipped(reason: "no mutate hook") }
        let directory = ConformanceFixture.scratchPath
        let name: (String) -> String = { scratchName(.changeEnumeration, $0) }
        let (created, modified, renamedFrom, renamedTo, deleted) = (
            name("created"), name("modified"), name("renamed-from"), name("renamed-to"), name("deleted")
        )
        // Take the anchor first: the setup below is reported too, which the assertions allow.
        let enumerator: any ItemEnumerator
        let anchorOrNil: SyncAnchor?
        do {
            enumerator = try await attempt("enumerator(for: workingSet)") {
                try await provider.enumerator(for: .workingSet)
            }
            anchorOrNil = try await attempt("currentSyncAnchor()") { try await enumerator.currentSyncAnchor() }
        } catch let violation as Violation where violation.isUnsupported {
            return .skipped(reason: "the provider does not enumerate changes")
        }
        guard let start = anchorOrNil else { return .skipped(reason: "the working set has no sync anchor") }

        for file in [modified, renamedFrom, deleted] {
            try await change(.createFile(path: "\(directory)/\(file)", contents: Array("before".utf8)), with: mutate)
        }
        let scratch = try await resolve(directory)
        var before: [String: Item] = [:]
        for file in [modified, renamedFrom, deleted] { before[file] = try await resolve("\(directory)/\(file)") }

        try await change(.createFile(path: "\(directory)/\(created)", contents: Array("new".utf8)), with: mutate)
        try await change(
            .modifyFile(path: "\(directory)/\(modified)", contents: Array("after, longer".utf8)), with: mutate)
        try await change(
            .renameFile(from: "\(directory)/\(renamedFrom)", to: "\(directory)/\(renamedTo)"), with: mutate)
        try await change(.deleteFile(path: "\(directory)/\(deleted)"), with: mutate)

        var updated: [ItemIdentifier: Item] = [:]
        var gone: Set<ItemIdentifier> = []
        var anchor = start
        for _ in 0..<10_000 {
            let batch: ChangeBatch
            do {
                batch = try await enumerator.enumerateChanges(from: anchor, suggestedPageSize: 100)
            } catch ProviderError.featureUnsupported {
                return .skipped(reason: "the provider does not enumerate changes")
            } catch {
                throw Violation(message: "enumerateChanges(from: a fresh anchor) threw \(error)", underlying: error)
            }
            for item in batch.updated {
                updated[item.identifier] = item
                gone.remove(item.identifier)
            }
            for identifier in batch.deleted {
                updated[identifier] = nil
                gone.insert(identifier)
            }
            anchor = batch.nextAnchor
            if !batch.moreComing { break }
        }
        let reported = Array(updated.values)
        try expect(
            reported.contains { $0.filename.description == created && $0.parentIdentifier == scratch.identifier },
            "a file created remotely was not reported")
        let modifiedBefore = before[modified]!
        try expect(
            updated[modifiedBefore.identifier].map { $0.version.content != modifiedBefore.version.content } ?? false,
            "a file modified remotely was not reported with a new content version")
        let renamedItem = before[renamedFrom]!
        let renameReported =
            updated[renamedItem.identifier]?.filename.description == renamedTo
            || (gone.contains(renamedItem.identifier) && reported.contains { $0.filename.description == renamedTo })
        try expect(renameReported, "a file renamed remotely was not reported under its new name")
        try expect(gone.contains(before[deleted]!.identifier), "a file deleted remotely was not reported deleted")

        let foreign = try SyncAnchor("fpfs-conformance: an anchor this provider never handed out")
        try await expectError(
            "enumerateChanges(from: a foreign anchor)", "syncAnchorExpired", matching: { $0 == .syncAnchorExpired }
        ) {
            _ = try await enumerator.enumerateChanges(from: foreign, suggestedPageSize: 100)
        }
        for file in [created, modified, renamedTo] {
            try await change(.deleteFile(path: "\(directory)/\(file)"), with: mutate)
        }
        return .passed
    }
}
