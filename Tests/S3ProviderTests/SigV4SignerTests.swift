import Crypto
import Foundation
import Testing

@testable import S3Provider

/// The signer against the example requests AWS publishes for S3 ("Examples: Signature
/// Calculations in AWS Signature Version 4", Amazon S3 API reference): the same requests must get
/// the same signatures, byte for byte.
@Suite struct SigV4SignerTests {
    let signer = SigV4Signer(
        credentials: S3Credentials(
            accessKey: "AKIAIOSFODNN7EXAMPLE", secretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1")
    /// 2013-05-24T00:00:00Z, the examples' time.
    let date = Date(timeIntervalSince1970: 1_369_353_600)
    let host = ("host", "examplebucket.s3.amazonaws.com")

    func signature(
        _ method: String, _ path: String, query: [(String, String)] = [], headers: [(String, String)] = [],
        payloadHash: String = SigV4Signer.emptyPayloadHash
    ) -> String {
        let added = signer.signingHeaders(
            method: method, path: path, query: query, headers: [host] + headers, payloadHash: payloadHash, date: date)
        return added.first { $0.0 == "Authorization" }?.1 ?? ""
    }

    @Test func getObjectWithRange() {
        #expect(
            signature("GET", "/test.txt", headers: [("Range", "bytes=0-9")])
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        )
    }

    @Test func putObjectWithAnEncodedKey() {
        let payload = "Welcome to Amazon S3."
        let hash = SigV4Signer.hex(SHA256Digest.of(Array(payload.utf8)))
        #expect(hash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let path = "/" + SigV4Signer.encoded("test$file.text", keepingSlashes: true)
        #expect(path == "/test%24file.text")
        #expect(
            signature(
                "PUT", path,
                headers: [("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
                payloadHash: hash)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
        )
    }

    @Test func getBucketLifecycle() {
        #expect(
            signature("GET", "/", query: [("lifecycle", "")]).hasSuffix(
                "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"))
    }

    @Test func listObjectsWithQuery() {
        #expect(
            signature("GET", "/", query: [("prefix", "J"), ("max-keys", "2")]).hasSuffix(
                "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"))
    }

    @Test func sessionTokenIsSignedAndSent() {
        let withToken = SigV4Signer(
            credentials: S3Credentials(accessKey: "AKIAIOSFODNN7EXAMPLE", secretKey: "secret", sessionToken: "TOKEN"),
            region: "us-east-1")
        let added = withToken.signingHeaders(
            method: "GET", path: "/", query: [], headers: [host], payloadHash: SigV4Signer.emptyPayloadHash, date: date)
        #expect(added.contains { $0 == ("x-amz-security-token", "TOKEN") })
        #expect(added.first { $0.0 == "Authorization" }?.1.contains("x-amz-security-token") == true)
    }
}
