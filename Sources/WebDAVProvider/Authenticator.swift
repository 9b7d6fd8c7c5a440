import Crypto
import Foundation
import NIOHTTP1
import Synchronization

/// Adds the `Authorization` header a server wants, learning Basic or Digest from its first 401.
///
/// No request carries credentials until the server has asked for them; from then on every request
/// carries them at once, so only the first request of a mount pays a second round trip. Digest
/// (RFC 7616, MD5 or SHA-256, qop `auth`) counts its nonce uses and follows a `stale` nonce.
final class Authenticator: Sendable {
    private let credentials: WebDAVCredentials?
    private let state = Mutex<Scheme?>(nil)

    private enum Scheme {
        case basic
        case digest(DigestChallenge, nonceCount: Int)
    }

    init(credentials: WebDAVCredentials?) {
        self.credentials = credentials
    }

    /// The header for a request, once the server has said how it wants to be asked.
    func authorization(method: String, uri: String) -> String? {
        guard let credentials else { return nil }
        return state.withLock { scheme -> String? in
            switch scheme {
            case nil:
                return nil
            case .basic:
                return "Basic " + Data("\(credentials.user):\(credentials.password)".utf8).base64EncodedString()
            case .digest(let challenge, let count):
                scheme = .digest(challenge, nonceCount: count + 1)
                return challenge.authorization(
                    credentials: credentials, method: method, uri: uri, nonceCount: count + 1)
            }
        }
    }

    /// Learns from a 401's `WWW-Authenticate` headers; true when asking again may succeed — the
    /// first challenge, or a Digest nonce gone stale — false when the credentials were refused.
    func challenged(by headers: HTTPHeaders, hadAuthorization: Bool) -> Bool {
        guard credentials != nil else { return false }
        let challenges = headers["WWW-Authenticate"].flatMap(AuthChallenge.parse)
        return state.withLock { scheme in
            if let digest = challenges.lazy.compactMap(DigestChallenge.init).first {
                let retry = !hadAuthorization || digest.isStale
                scheme = .digest(digest, nonceCount: 0)
                return retry
            }
            if challenges.contains(where: { $0.scheme == "basic" }) {
                scheme = .basic
                return !hadAuthorization
            }
            return false
        }
    }
}

/// One challenge of a `WWW-Authenticate` header: a scheme and its parameters.
struct AuthChallenge {
    var scheme: String
    var parameters: [String: String]

    /// The challenges in one header value, e.g. `Digest realm="x", nonce="y", Basic realm="x"`.
    static func parse(_ header: String) -> [AuthChallenge] {
        var challenges: [AuthChallenge] = []
        var scanner = Substring(header)
        while true {
            scanner = scanner.drop { $0 == " " || $0 == "," }
            guard !scanner.isEmpty else { return challenges }
            let token = scanner.prefix { $0 != " " && $0 != "," && $0 != "=" }
            scanner = scanner.dropFirst(token.count)
            if scanner.first == "=", !challenges.isEmpty {
                scanner = scanner.dropFirst()
                let value: Substring
                if scanner.first == "\"" {
                    var text = ""
                    var index = scanner.index(after: scanner.startIndex)
                    while index < scanner.endIndex, scanner[index] != "\"" {
                        if scanner[index] == "\\", scanner.index(after: index) < scanner.endIndex {
                            index = scanner.index(after: index)
                        }
                        text.append(scanner[index])
                        index = scanner.index(after: index)
                    }
                    scanner = index < scanner.endIndex ? scanner[scanner.index(after: index)...] : ""
                    value = Substring(text)
                } else {
                    value = scanner.prefix { $0 != "," && $0 != " " }
                    scanner = scanner.dropFirst(value.count)
                }
                challenges[challenges.count - 1].parameters[token.lowercased()] = String(value)
            } else {
                challenges.append(AuthChallenge(scheme: token.lowercased(), parameters: [:]))
            }
        }
    }
}

/// A Digest challenge the client can answer.
struct DigestChallenge {
    var realm: String
    var nonce: String
    var opaque: String?
    var algorithm: String
    var qopAuth: Bool
    var isStale: Bool

    init?(_ challenge: AuthChallenge) {
        guard challenge.scheme == "digest", let realm = challenge.parameters["realm"],
            let nonce = challenge.parameters["nonce"]
        else { return nil }
        let algorithm = (challenge.parameters["algorithm"] ?? "MD5").uppercased()
        guard algorithm == "MD5" || algorithm == "SHA-256" else { return nil }
        let qop = challenge.parameters["qop"]?.split(separator: ",").map { String($0).trimmingSpaces.lowercased() }
        if let qop, !qop.contains("auth") { return nil }
        self.realm = realm
        self.nonce = nonce
        self.opaque = challenge.parameters["opaque"]
        self.algorithm = algorithm
        self.qopAuth = qop != nil
        self.isStale = challenge.parameters["stale"]?.lowercased() == "true"
    }

    /// The `Authorization` value for one request; `cnonce` is random unless a test fixes it.
    func authorization(
        credentials: WebDAVCredentials, method: String, uri: String, nonceCount: Int,
        cnonce: String = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    ) -> String {
        let hash: (String) -> String =
            algorithm == "SHA-256"
            ? { SHA256.hash(data: Data($0.utf8)).hexadecimal } : { Insecure.MD5.hash(data: Data($0.utf8)).hexadecimal }
        let ha1 = hash("\(credentials.user):\(realm):\(credentials.password)")
        let ha2 = hash("\(method):\(uri)")
        let hex = String(nonceCount, radix: 16)
        let nc = String(repeating: "0", count: max(0, 8 - hex.count)) + hex
        let response = qopAuth ? hash("\(ha1):\(nonce):\(nc):\(cnonce):auth:\(ha2)") : hash("\(ha1):\(nonce):\(ha2)")
        var fields = [
            "username=\"\(credentials.user)\"", "realm=\"\(realm)\"", "nonce=\"\(nonce)\"", "uri=\"\(uri)\"",
            "algorithm=\(algorithm)", "response=\"\(response)\"",
        ]
        if qopAuth { fields += ["qop=auth", "nc=\(nc)", "cnonce=\"\(cnonce)\""] }
        if let opaque { fields.append("opaque=\"\(opaque)\"") }
        return "Digest " + fields.joined(separator: ", ")
    }
}

extension Digest {
    var hexadecimal: String { map { String(format: "%02x", $0) }.joined() }
}
