import FileProviderKit
import Foundation
import NIOHTTP1

/// A file sent in parts (`CreateMultipartUpload`, `UploadPart`…, `CompleteMultipartUpload`), for
/// files above the multipart threshold; a failed upload is aborted, so no parts are left billed.
///
/// Each upload under way is noted in the state folder (`multipart/UPLOAD-ID`, holding the key)
/// before its first part and forgotten once completed or aborted, so an upload a kill -9 cut off
/// is aborted at the next mount (`abortAbandoned`), and only uploads this mount began: another
/// machine's upload under way in the same bucket is not touched.
struct S3MultipartUpload {
    let provider: S3Provider

    /// S3's limits: at most 10 000 parts, each at least 5 MiB but the last.
    static let maximumParts: Int64 = 10_000
    static let minimumPartSize: Int64 = 5 << 20
    static let maximumPartSize: Int64 = 5 << 30

    /// The part size for a file of `length` bytes: the configured one, raised so that no file
    /// needs more than 10 000 parts.
    static func partSize(for length: Int64, configured: Int64) -> Int64 {
        let least = (length + maximumParts - 1) / maximumParts
        return max(configured, minimumPartSize, least)
    }

    /// Uploads `length` bytes of `contents` as the key `key` with `headers` (content type and
    /// metadata), up to `partsInFlight` parts at once. `precondition` also goes with the
    /// completion, for servers that honour it there (AWS; RGW 16 ignores it, so the caller checks
    /// it by a `HEAD` first); a 412 then is `versionNoLongerAvailable`.
    func upload(
        _ contents: URL, length: Int64, key: String, headers: [(String, String)], precondition: (String, String),
        path: S3Path
    ) async throws {
        let client = provider.client
        try await inParts(
            of: length, partSize: client.configuration.partSize, key: key, headers: headers,
            precondition: precondition, path: path
        ) { number, start, count, uploadID in
            let answer = try await client.sendCollecting(
                .init(
                    method: .PUT, key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)],
                    body: .file(contents, start: start, length: count)))
            guard answer.status.code == 200, let etag = answer.headers.first(name: "etag") else {
                throw client.error(for: answer, doing: "uploading part \(number) of \(path)", identifier: nil)
            }
            return etag
        }
    }

    /// Copies `length` bytes of the object `sourceKey`, provided its ETag is still `etag`, to the
    /// key `key` with `headers` (`UploadPartCopy`): the copy of an object too large for
    /// `CopyObject` (5 GiB). Every part names the ETag, so parts of two versions never mix.
    func copy(
        _ sourceKey: String, etag: String, length: Int64, to key: String, headers: [(String, String)], path: S3Path
    ) async throws {
        let client = provider.client
        let source = "/\(client.configuration.bucket)/" + SigV4Signer.encoded(sourceKey, keepingSlashes: true)
        try await inParts(
            of: length, partSize: client.configuration.partSize, key: key, headers: headers,
            precondition: nil, path: path
        ) { number, start, count, uploadID in
            let answer = try await client.sendCollecting(
                .init(
                    method: .PUT, key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)],
                    headers: [
                        ("x-amz-copy-source", source), ("x-amz-copy-source-if-match", etag),
                        ("x-amz-copy-source-range", "bytes=\(start)-\(start + count - 1)"),
                    ]))
            if answer.status.code == 412 { throw ProviderError.versionNoLongerAvailable }
            guard answer.status.code == 200, let document = try? S3XMLElement.parse(answer.body),
                document.name != "Error", let etag = document.text(of: "ETag")
            else { throw client.error(for: answer, doing: "copying part \(number) to \(path)", identifier: nil) }
            return etag
        }
    }

    /// A multipart upload of `length` bytes as `key` with `headers`: `sendPart(number, start,
    /// count, uploadID)` sends one part and returns its ETag, up to `partsInFlight` at once; then
    /// the completion (with `precondition`, see `upload`). Any failure aborts the upload.
    private func inParts(
        of length: Int64, partSize configured: Int64, key: String, headers: [(String, String)],
        precondition: (String, String)?, path: S3Path,
        sendPart: @escaping @Sendable (Int, Int64, Int64, String) async throws -> String
    ) async throws {
        let client = provider.client
        let started = try await client.sendCollecting(
            .init(method: .POST, key: key, query: [("uploads", "")], headers: headers, isIdempotent: false))
        guard started.status.code == 200,
            let uploadID = (try? S3XMLElement.parse(started.body))?.text(of: "UploadId"), !uploadID.isEmpty
        else { throw client.error(for: started, doing: "starting the upload of \(path)", identifier: path.identifier) }
        try await note(uploadID, key: key)
        do {
            let size = min(Self.partSize(for: length, configured: configured), Self.maximumPartSize)
            let count = Int(max(1, (length + size - 1) / size))
            var etags = [String](repeating: "", count: count)
            try await withThrowingTaskGroup(of: (Int, String).self) { group in
                var next = 0
                func startPart() {
                    let index = next
                    next += 1
                    group.addTask {
                        let start = Int64(index) * size
                        return (index, try await sendPart(index + 1, start, min(size, length - start), uploadID))
                    }
                }
                while next < min(count, max(1, client.configuration.partsInFlight)) { startPart() }
                while let (index, etag) = try await group.next() {
                    etags[index] = etag
                    if next < count { startPart() }
                }
            }
            let list = etags.enumerated().map {
                "<Part><PartNumber>\($0.offset + 1)</PartNumber><ETag>\($0.element)</ETag></Part>"
            }.joined()
            let answer = try await client.sendCollecting(
                .init(
                    method: .POST, key: key, query: [("uploadId", uploadID)], headers: precondition.map { [$0] } ?? [],
                    body: .bytes(Array("<CompleteMultipartUpload>\(list)</CompleteMultipartUpload>".utf8)),
                    isIdempotent: false))
            if [409, 412].contains(answer.status.code) { throw ProviderError.versionNoLongerAvailable }
            // A completion can fail after its 200 (AWS sends the error in the body).
            guard answer.status.code == 200, (try? S3XMLElement.parse(answer.body))?.name != "Error" else {
                throw client.error(for: answer, doing: "completing the upload of \(path)", identifier: nil)
            }
            try await forget(uploadID)
        } catch {
            await abort(uploadID, key: key)
            throw error
        }
    }

    /// Aborts the uploads noted in the state folder that a kill -9 left (see the type).
    func abortAbandoned() async {
        guard let directory = Self.directory(of: provider) else { return }
        let noted: [(String, String)] =
            (try? await BlockingIO.run {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
                return names.compactMap { name in
                    (try? String(contentsOf: directory.appending(path: name), encoding: .utf8)).map { (name, $0) }
                }
            }) ?? []
        for (uploadID, key) in noted { await abort(uploadID, key: key) }
    }

    private func abort(_ uploadID: String, key: String) async {
        let answer = try? await provider.client.sendCollecting(
            .init(method: .DELETE, key: key, query: [("uploadId", uploadID)]))
        // Gone already (404 NoSuchUpload) counts as aborted; anything else is tried at the next mount.
        if let answer, [200, 204, 404].contains(answer.status.code) { try? await forget(uploadID) }
    }

    private static func directory(of provider: S3Provider) -> URL? {
        provider.client.configuration.stateDirectory?.appending(path: "multipart")
    }

    /// Upload ids are the server's text; only a name that is safe as a file name is noted.
    private static func fileName(_ uploadID: String) -> String? {
        uploadID.allSatisfy { $0.isLetter || $0.isNumber || "-_.~".contains($0) } ? uploadID : nil
    }

    private func note(_ uploadID: String, key: String) async throws {
        guard let directory = Self.directory(of: provider), let name = Self.fileName(uploadID) else { return }
        try await BlockingIO.run {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(key.utf8).write(to: directory.appending(path: name), options: .atomic)
        }
    }

    private func forget(_ uploadID: String) async throws {
        guard let directory = Self.directory(of: provider), let name = Self.fileName(uploadID) else { return }
        try await BlockingIO.run { try? FileManager.default.removeItem(at: directory.appending(path: name)) }
    }
}
