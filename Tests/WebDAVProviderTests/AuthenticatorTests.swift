import NIOHTTP1
import Testing

@testable import WebDAVProvider

@Suite struct AuthenticatorTests {
    @Test func digestAnswersTheRFC2617Example() throws {
        let header = """
            Digest realm="testrealm@host.com", qop="auth,auth-int", \
            nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41"
            """
        let challenge = try #require(AuthChallenge.parse(header).compactMap(DigestChallenge.init).first)
        let value = challenge.authorization(
            credentials: WebDAVCredentials(user: "Mufasa", password: "Circle Of Life"), method: "GET",
            uri: "/dir/index.html", nonceCount: 1, cnonce: "0a4f113b")
        #expect(value.contains("response=\"6629fae49393a05397450978507c4ef1\""))
        #expect(value.contains("nc=00000001"))
        #expect(value.contains("opaque=\"5ccc069c403ebaf9f0171e9517f40e41\""))
    }

    @Test func challengesWithSeveralSchemesParse() {
        let challenges = AuthChallenge.parse(#"Basic realm="a, b", Digest realm="r", nonce="n", stale=TRUE"#)
        #expect(challenges.map(\.scheme) == ["basic", "digest"])
        #expect(challenges[0].parameters["realm"] == "a, b")
        #expect(challenges[1].parameters["stale"] == "TRUE")
    }

    @Test func credentialsAreSentOnlyAfterAChallengeAndRefusedOnes() {
        let authenticator = Authenticator(credentials: WebDAVCredentials(user: "u", password: "secret"))
        #expect(authenticator.authorization(method: "GET", uri: "/") == nil)
        var headers = HTTPHeaders()
        headers.add(name: "WWW-Authenticate", value: #"Basic realm="dav""#)
        #expect(authenticator.challenged(by: headers, hadAuthorization: false))
        #expect(authenticator.authorization(method: "GET", uri: "/") == "Basic dTpzZWNyZXQ=")
        #expect(!authenticator.challenged(by: headers, hadAuthorization: true))
    }

    @Test func credentialsNeverPrintTheirPassword() {
        let credentials = WebDAVCredentials(user: "u", password: "hunter2")
        #expect(!"\(credentials)".contains("hunter2"))
        #expect(!String(reflecting: credentials).contains("hunter2"))
    }
}
