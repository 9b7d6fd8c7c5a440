import Foundation
import Testing

@testable import S3Provider

/// Credentials are found as the AWS tools find them: the environment first, then the profile.
@Suite struct S3CredentialsTests {
    @Test func environmentComesFirst() {
        let found = S3Credentials.find(
            environment: [
                "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": "T",
                "AWS_REGION": "eu-west-3", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
                "AWS_CONFIG_FILE": "/nonexistent",
            ], home: "/nonexistent")
        #expect(found.credentials?.accessKey == "AK")
        #expect(found.credentials?.secretKey == "SK")
        #expect(found.credentials?.sessionToken == "T")
        #expect(found.region == "eu-west-3")
    }

    @Test func profileFromTheSharedFiles() throws {
        let home = FileManager.default.temporaryDirectory.appending(path: "fpfs-aws-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        try FileManager.default.createDirectory(at: home.appending(path: ".aws"), withIntermediateDirectories: true)
        try """
        [default]
        aws_access_key_id = DEFAULTKEY
        aws_secret_access_key = DEFAULTSECRET
        # a comment
        [work]
        aws_access_key_id = WORKKEY
        aws_secret_access_key = WORK/SECRET=
        """.write(to: home.appending(path: ".aws/credentials"), atomically: true, encoding: .utf8)
        try """
        [profile work]
        region = ap-south-1
        endpoint_url = http://127.0.0.1:9000
        ca_bundle = /etc/work-ca.pem
        """.write(to: home.appending(path: ".aws/config"), atomically: true, encoding: .utf8)
        let work = S3Credentials.find(environment: ["AWS_PROFILE": "work"], home: home.path)
        #expect(work.credentials?.accessKey == "WORKKEY")
        #expect(work.credentials?.secretKey == "WORK/SECRET=")
        #expect(work.region == "ap-south-1")
        #expect(work.endpoint == "http://127.0.0.1:9000")
        #expect(work.caBundle == "/etc/work-ca.pem")
        // AWS_CA_BUNDLE comes first; empty, it is not set.
        let bundled = S3Credentials.find(
            environment: ["AWS_PROFILE": "work", "AWS_CA_BUNDLE": "/ca.pem"], home: home.path)
        #expect(bundled.caBundle == "/ca.pem")
        #expect(S3Credentials.find(environment: ["AWS_CA_BUNDLE": ""], home: home.path).caBundle == nil)
        let plain = S3Credentials.find(environment: [:], home: home.path)
        #expect(plain.credentials?.accessKey == "DEFAULTKEY")
        #expect(plain.region == nil)
        #expect(!"\(plain.credentials!)".contains("DEFAULTSECRET"))
    }
}
