/// A user name and password for the server. The password is never printed: `description` hides it,
/// so a credentials value that ends up in a log or an error message gives nothing away.
public struct WebDAVCredentials: Sendable, CustomStringConvertible {
    public var user: String
    public var password: String

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    public var description: String { "\(user):<hidden>" }
}
