import Foundation
import WebDAVProvider

/// Where a remote's password comes from: `FPFS_PASSWORD`, else the netrc file (`$NETRC` or
/// `~/.netrc`) — never the command line, where every user of the machine could read it in the
/// process list, nor the daemon's environment (`SecretHandOff`).
enum PasswordSource {
    static let variable = "FPFS_PASSWORD"

    /// The credentials for `host`: with `user` given, that user and `password` (or the netrc
    /// file's); without, a netrc entry's login and password when there is one, else none.
    static func credentials(
        user: String?, password: String?, host: String, environment: [String: String]
    ) throws -> WebDAVCredentials? {
        let entry = try netrcEntry(host: host, environment: environment)
        if let user {
            if let password { return WebDAVCredentials(user: user, password: password) }
            if let entry, entry.login == nil || entry.login == user, let password = entry.password {
                return WebDAVCredentials(user: user, password: password)
            }
            throw CommandFailure(
                "no password for '\(user)': set FPFS_PASSWORD or add 'machine \(host) login \(user) password …' to ~/.netrc"
            )
        }
        if let entry, let login = entry.login, let password = entry.password {
            return WebDAVCredentials(user: login, password: password)
        }
        if password != nil {
            throw CommandFailure("FPFS_PASSWORD is set but no user is given: add --user NAME")
        }
        return nil
    }

    /// The `machine HOST` entry of the netrc file (or its `default`), if the file exists.
    private static func netrcEntry(host: String, environment: [String: String]) throws -> (
        login: String?, password: String?
    )? {
        let path = environment["NETRC"] ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.netrc"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let words = text.split(whereSeparator: \.isWhitespace).map(String.init)
        var entries: [(machine: String?, login: String?, password: String?)] = []
        var index = 0
        while index < words.count {
            let word = words[index]
            let value = index + 1 < words.count ? words[index + 1] : nil
            switch word {
            case "machine":
                entries.append((value, nil, nil))
                index += 2
            case "default":
                entries.append((nil, nil, nil))
                index += 1
            case "login" where !entries.isEmpty:
                entries[entries.count - 1].login = value
                index += 2
            case "password" where !entries.isEmpty:
                entries[entries.count - 1].password = value
                index += 2
            case "account":
                index += 2
            case "macdef":
                // A macro runs to the next blank line, which splitting on white space cannot see;
                // fpfs needs none, so stop reading here.
                index = words.count
            default:
                index += 1
            }
        }
        let match =
            entries.first { $0.machine?.lowercased() == host.lowercased() } ?? entries.first { $0.machine == nil }
        return match.map { ($0.login, $0.password) }
    }
}
