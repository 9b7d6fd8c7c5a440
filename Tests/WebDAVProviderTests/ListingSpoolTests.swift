import FileProviderKit
import Foundation
import Testing

@testable import WebDAVProvider

@Suite struct ListingSpoolTests {
    /// Items that use every field: optional ones set on some, names that are not UTF-8, long
    /// versions, user info and extended attributes.
    static func items(_ count: Int) -> [Item] {
        (0..<count).map { index in
            var filename = Array("name-\(index)".utf8)
            if index % 3 == 0 { filename += [0xFF, 0xFE] }
            let kind: ItemKind = index % 5 == 0 ? .directory : index % 7 == 0 ? .symlink : .file
            let created: Timestamp? = index % 2 == 0 ? Timestamp(seconds: -Int64(index), nanoseconds: 999_999_999) : nil
            let modified = Timestamp(seconds: Int64(index) * 1_000_003, nanoseconds: UInt32(index))
            let version = ItemVersion(
                content: [UInt8](repeating: UInt8(index % 256), count: index % 129), metadata: Array("m\(index)".utf8))
            let target: [UInt8]? = index % 7 == 0 ? Array("../target \(index)".utf8) : nil
            let userInfo: [String: String] = index % 4 == 0 ? ["etag": "\"\(index)\"", "ü": "value"] : [:]
            let attributes: [String: [UInt8]]? = index % 6 == 0 ? ["user.a": [0, 1, 2], "user.empty": []] : nil
            return Item(
                identifier: ItemIdentifier("/dav/folder/é \(index)"), parentIdentifier: ItemIdentifier("/dav/folder/"),
                filename: Filename(bytes: filename), kind: kind, size: UInt64(index) << 33, creationDate: created,
                contentModificationDate: modified, permissions: UInt16(index % 0o7777),
                capabilities: ItemCapabilities(rawValue: UInt32(index % 128)), version: version, symlinkTarget: target,
                userInfo: userInfo, extendedAttributes: attributes)
        }
    }

    /// Every page from `first` on, read `limit` at a time: the items, and the token of each page.
    static func readAll(from first: EnumerationPage, in spools: ListingSpools, limit: Int = 1000) async throws
        -> (items: [Item], tokens: [String])
    {
        var page: EnumerationPage? = first
        var read: [Item] = []
        var tokens: [String] = []
        while let token = page {
            let result = try await spools.page(token, limit: limit)
            read += result.items
            tokens.append(String(decoding: token.bytes, as: UTF8.self))
            page = result.nextPage
        }
        return (read, tokens)
    }

    /// Items come back page by page in the order they went in: from memory within the budget
    /// (no file is written), from memory and then the file past it. The spool goes with its last
    /// page, and a page asked for again after the next one has expired.
    @Test(arguments: [16 << 20, 400_000])
    func itemsComeBackPageByPageAsTheyWentIn(memoryBudget: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let items = Self.items(6000)
        let spools = ListingSpools(directory: directory, memoryBudget: memoryBudget)
        var spool = ListingSpool(in: spools)
        for item in items { try await spool.append(item) }
        try await spool.finish()
        let spillsToDisk = memoryBudget < 1 << 20
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).count == (spillsToDisk ? 1 : 0))
        let first = try spool.firstPage
        let (read, tokens) = try await Self.readAll(from: first, in: spools, limit: 700)
        #expect(read == items)
        #expect(tokens.allSatisfy { $0.contains(":m") } == !spillsToDisk)
        if !spillsToDisk { #expect(tokens.count == 9, "6000 items, 700 to a page") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        await #expect(throws: ProviderError.pageExpired) {
            _ = try await spools.page(first, limit: 10)
        }
    }

    /// The engine reads pages while the PROPFIND answer is still being spooled: a page waits for
    /// what the writer has not flushed, and the listing ends only when the writer finishes.
    @Test func pagesReadWhileTheSpoolIsWrittenWaitForTheWriter() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let items = Self.items(30_000)  // several flushes
        let spools = ListingSpools(directory: directory)
        var spool = ListingSpool(in: spools)
        let first = try spool.firstPage
        let reader = Task { try await Self.readAll(from: first, in: spools).items }
        for (index, item) in items.enumerated() {
            try await spool.append(item)
            if index % 5000 == 0 { try await Task.sleep(for: .milliseconds(20)) }
        }
        try await spool.finish()
        #expect(try await reader.value == items)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    /// A finished listing whose reader gave up is forgotten when the next one begins, once it
    /// has gone unread for `abandonedAfter`; its token then expires.
    @Test func aListingItsReaderAbandonedIsForgotten() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let spools = ListingSpools(directory: directory, abandonedAfter: .milliseconds(50))
        var abandoned = ListingSpool(in: spools)
        for item in Self.items(2000) { try await abandoned.append(item) }
        try await abandoned.finish()
        try await Task.sleep(for: .milliseconds(100))
        _ = ListingSpool(in: spools)
        await #expect(throws: ProviderError.pageExpired) {
            _ = try await spools.page(try abandoned.firstPage, limit: 10)
        }
    }

    @Test func aListingThatBreaksOffFailsItsReaderWithTheSameError() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let spools = ListingSpools(directory: directory)
        var spool = ListingSpool(in: spools)
        for item in Self.items(10_000) { try await spool.append(item) }
        let broken = ProviderError.serverUnreachable(reason: "the answer broke off")
        spool.fail(broken)
        var page: EnumerationPage? = try spool.firstPage
        await #expect(throws: broken) {
            while let token = page { page = try await spools.page(token, limit: 1000).nextPage }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test func aDamagedRecordIsAnErrorNotAnItem() throws {
        var record: [UInt8] = []
        PackedItem.append(Self.items(1)[0], to: &record)
        #expect(try PackedItem.next(in: record, at: 0)?.item == Self.items(1)[0])
        #expect(try PackedItem.next(in: Array(record.dropLast()), at: 0) == nil, "incomplete: read more")
        var damaged = record
        damaged[0] &-= 1  // the length says one byte less than the fields take
        #expect(throws: PackedItem.Malformed.self) { try PackedItem.next(in: damaged, at: 0) }
    }
}
