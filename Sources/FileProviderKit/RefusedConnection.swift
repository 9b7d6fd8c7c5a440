import Foundation

/// How a provider that talks to a server over TCP words a connection the port refused, so that
/// every remote (WebDAV, S3) says the same thing for the same mistake: a server not started, or a
/// wrong port.
public enum RefusedConnection {
    /// "nothing listens on AUTHORITY — is the server running?" when `error` is a refused connection
    /// (ECONNREFUSED), however a client library wraps it (its text holds the system's words for
    /// that errno); nil for any other error. `authority` is the `host[:port]` connected to.
    public static func reason(for error: any Error, authority: String) -> String? {
        guard "\(error)".contains(String(cString: strerror(ECONNREFUSED))) else { return nil }
        return "nothing listens on \(authority) — is the server running?"
    }
}
