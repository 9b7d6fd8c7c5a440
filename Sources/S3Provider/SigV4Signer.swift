import Crypto
import Foundation

/// AWS Signature Version 4 for S3: the `Authorization` header of a request, computed from its
/// method, path, query, headers and payload hash with the secret key (HMAC-SHA256 chains, SHA-256
/// of the canonical request). Checked against AWS's published example requests (SigV4SignerTests).
struct SigV4Signer: Sendable {
    let credentials: S3Credentials
    let region: String
    var service = "s3"

    /// The hash to sign for a body not hashed ahead (a file streamed up, an empty GET is hashed).
    static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// SHA-256 of no bytes.
    static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// The headers to add to a request: `x-amz-date`, `x-amz-content-sha256`, the session token
    /// when there is one, and `Authorization`. `headers` are the request's own (with `host`), all
    /// signed; `path` is the URI path as sent (already percent-encoded); `query` holds the decoded
    /// parameters.
    func signingHeaders(
        method: String, path: String, query: [(String, String)], headers: [(String, String)], payloadHash: String,
        date: Date
    ) -> [(String, String)] {
        let (day, stamp) = Self.timestamps(of: date)
        var added = [("x-amz-date", stamp), ("x-amz-content-sha256", payloadHash)]
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        let signed = (headers + added).map { ($0.0.lowercased(), Self.trimmed($0.1)) }.sorted { $0.0 < $1.0 }
        let signedNames = signed.map(\.0).joined(separator: ";")
        let canonicalRequest = [
            method, path, Self.canonicalQuery(query), signed.map { "\($0.0):\($0.1)\n" }.joined(), signedNames,
            payloadHash,
        ].joined(separator: "\n")
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = [
            "AWS4-HMAC-SHA256", stamp, scope, Self.hex(SHA256.hash(data: Data(canonicalRequest.utf8))),
        ].joined(separator: "\n")
        var key = SymmetricKey(data: Data("AWS4\(credentials.secretKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        let signature = Self.hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key))
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(credentials.accessKey)/\(scope),SignedHeaders=\(signedNames),Signature=\(signature)"
        return added + [("Authorization", authorization)]
    }

    /// The query as signed and sent: each name and value percent-encoded (everything but
    /// `A-Za-z0-9-_.~`), sorted by name then value, joined with `&`.
    static func canonicalQuery(_ query: [(String, String)]) -> String {
        query.map { (encoded($0.0), encoded($0.1)) }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
            .map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// Percent-encoding of everything but the unreserved characters; with `keepingSlashes`, `/` too
    /// stays (an object key in a path).
    static func encoded(_ text: String, keepingSlashes: Bool = false) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepingSlashes:
                result.append("/")
            default:
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }

    /// `20130524` and `20130524T000000Z` for a date, in UTC.
    static func timestamps(of date: Date) -> (day: String, stamp: String) {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&time, &parts)
        let day =
            String(parts.tm_year + 1900) + String(parts.tm_mon + 1).leftPadded(to: 2)
            + String(parts.tm_mday).leftPadded(to: 2)
        let clock = [parts.tm_hour, parts.tm_min, parts.tm_sec].map { String($0).leftPadded(to: 2) }.joined()
        return (day, "\(day)T\(clock)Z")
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// A header value as signed: outer spaces gone, inner runs of spaces as one.
    private static func trimmed(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }
}

extension String {
    /// The string with `0`s before it up to `width` characters.
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
