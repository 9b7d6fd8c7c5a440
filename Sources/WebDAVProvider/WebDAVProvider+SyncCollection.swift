import AsyncHTTPClient
import FileProviderKit
import NIOCore
import NIOHTTP1

/// Changes by RFC 6578's `sync-collection` REPORT, for servers that offer it (see
/// `WebDAVWorkingSetEnumerator`).
extension WebDAVProvider {
    /// What one REPORT reported: items changed or created (renames and moves included), identifiers
    /// gone, the token to ask from next, and whether the server held back more.
    struct SyncChanges {
        var updated: [Item] = []
        var deleted: [ItemIdentifier] = []
        var token: String
        var truncated: Bool
    }

    /// The changes below the root since `token`, at most `limit` of them where the server honours
    /// limits. A member answered with 404 is gone — unless the same REPORT shows its identifier
    /// elsewhere, which is a rename or move. `syncAnchorExpired` when the server no longer knows
    /// the token.
    func changes(since token: String, limit: Int?) async throws -> SyncChanges {
        let usesFileIDs = try await serverFeatures().usesFileIDs
        var updated: [Item] = []
        var gone: [ItemIdentifier] = []
        var present: [(MultistatusParser.Response, RemotePath)] = []
        let answer = try await syncCollection(since: token, limit: limit) { entry, path in
            if entry.status == 404 || entry.status == 410 {
                // A path the index does not know was never handed out under a fileid. Resolved
                // before any member that is still there moves the index on: a folder renamed in
                // the same answer would otherwise hide its deleted children's old paths.
                if let identifier = usesFileIDs ? fileIDs.identifier(at: path) : path.identifier {
                    gone.append(identifier)
                }
            } else {
                present.append((entry, path))
            }
        }
        for (entry, path) in present {
            updated.append(try await item(described: entry, at: path, parent: nil))
        }
        let stayed = Set(updated.map(\.identifier))
        var deleted: [ItemIdentifier] = []
        var seen = stayed
        for identifier in gone where seen.insert(identifier).inserted {
            deleted.append(identifier)
            fileIDs.forget(identifier)
        }
        try await fileIDs.flush()
        return SyncChanges(updated: updated, deleted: deleted, token: answer.token, truncated: answer.truncated)
    }

    /// The server's token for the present: the root's `sync-token` property, or — from a server
    /// that has none — the token of a REPORT from the beginning, whose members are dropped.
    func currentSyncToken() async throws -> String {
        if let token = try await propfind(.root, body: Self.rootPropfindBody).syncToken { return token }
        return try await syncCollection(since: "", limit: nil) { _, _ in }.token
    }

    /// Sends the REPORT and hands each member below the root to `each` as the answer streams in.
    /// A server that cannot limit its answer (507 to the whole request) is asked again without.
    /// One that refuses the REPORT (400, 403, 405, 501) is not asked again: `syncAnchorExpired`,
    /// and the working set walks.
    private func syncCollection(
        since token: String, limit: Int?, each: (MultistatusParser.Response, RemotePath) async throws -> Void
    ) async throws -> (token: String, truncated: Bool) {
        let body = Self.syncCollectionBody(token: token, limit: limit)
        let request = WebDAVClient.Request(
            method: .RAW(value: "REPORT"), path: .root, isCollection: true,
            headers: [("Depth", "0"), ("Content-Type", "application/xml; charset=utf-8")], bytes: body)
        let response = try await client.send(request)
        switch response.status.code {
        case 207:
            break
        case 400, 403, 405, 409, 501:
            let answer = try? await response.body.collect(upTo: 1 << 20)
            if answer.map({ String(buffer: $0).contains("valid-sync-token") }) ?? false {
                throw ProviderError.syncAnchorExpired
            }
            if response.status.code == 409 {
                throw WebDAVClient.error(for: response.status, path: .root, method: request.method)
            }
            stopUsingSyncCollection()
            throw ProviderError.syncAnchorExpired
        case 507 where limit != nil:
            await response.discardBody()
            return try await syncCollection(since: token, limit: nil, each: each)
        default:
            await response.discardBody()
            throw WebDAVClient.error(for: response.status, path: .root, method: request.method)
        }
        var truncated = false
        let parser = try await readMultistatus(response, doing: "REPORT sync-collection") { entry in
            guard let path = client.path(ofHref: entry.href) else {
                throw ProviderError.cannotSynchronize(
                    reason: "REPORT sync-collection: the server listed '\(entry.href)', which is not below the mount")
            }
            if path.components.isEmpty {
                truncated = truncated || entry.status == 507
            } else {
                try await each(entry, path)
            }
        }
        guard let next = parser.syncToken, !next.isEmpty else {
            throw ProviderError.cannotSynchronize(reason: "REPORT sync-collection: the answer has no sync-token")
        }
        return (next, truncated)
    }

    private static func syncCollectionBody(token: String, limit: Int?) -> ByteBuffer {
        let escaped = token.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
        let limitElement = limit.map { "<d:limit><d:nresults>\($0)</d:nresults></d:limit>" } ?? ""
        return ByteBuffer(
            string: """
                <?xml version="1.0" encoding="utf-8"?>
                <d:sync-collection xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:sync-token>\(escaped)</d:sync-token>\
                <d:sync-level>infinite</d:sync-level>\(limitElement)<d:prop>\(itemProperties)</d:prop></d:sync-collection>
                """)
    }
}
