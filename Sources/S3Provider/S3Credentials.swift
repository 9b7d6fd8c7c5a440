import Foundation

/// The keys requests are signed with, found as every AWS tool finds them; never printed
/// (`description` shows the access key only).
public struct S3Credentials: Sendable, CustomStringConvertible {
    public var accessKey: String
    public var secretKey: String
    public var sessionToken: String?

    public init(accessKey: String, secretKey: String, sessionToken: String? = nil) {
        self.accessKey = accessKey
        self.secretKey = secretKey
        self.sessionToken = sessionToken
    }

    public var description: String { "S3 credentials of access key \(accessKey)" }

    /// What the environment and the shared files give, in the AWS tools' order: the keys from
    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (with `AWS_SESSION_TOKEN`), else the profile
    /// `AWS_PROFILE` (or `default`) of `AWS_SHARED_CREDENTIALS_FILE` (or ~/.aws/credentials) and
    /// of `AWS_CONFIG_FILE` (or ~/.aws/config, where it is `[profile NAME]`). The region comes from
    /// `AWS_REGION`, `AWS_DEFAULT_REGION`, then the profile; the endpoint from `AWS_ENDPOINT_URL_S3`,
    /// `AWS_ENDPOINT_URL`, then the profile's `endpoint_url`; the CA bundle from `AWS_CA_BUNDLE`,
    /// then the profile's `ca_bundle`. Blocks briefly (reads two small files).
    public struct Found: Sendable {
        public var credentials: S3Credentials?
        public var region: String?
        public var endpoint: String?
        public var caBundle: String?
    }

    public static func find(environment: [String: String], home: String) -> Found {
        let profile = environment["AWS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 } ?? "default"
        let credentialsFile = environment["AWS_SHARED_CREDENTIALS_FILE"] ?? home + "/.aws/credentials"
        let configFile = environment["AWS_CONFIG_FILE"] ?? home + "/.aws/config"
        let fromCredentials = SharedConfigFile(path: credentialsFile).section(profile)
        let fromConfig = SharedConfigFile(path: configFile).section(
            profile == "default" ? "default" : "profile \(profile)")
        let profileValue = { (key: String) in fromCredentials[key] ?? fromConfig[key] }
        var found = Found()
        if let access = environment["AWS_ACCESS_KEY_ID"], let secret = environment["AWS_SECRET_ACCESS_KEY"],
            !access.isEmpty, !secret.isEmpty
        {
            found.credentials = S3Credentials(
                accessKey: access, secretKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"].flatMap(nonEmpty))
        } else if let access = profileValue("aws_access_key_id"), let secret = profileValue("aws_secret_access_key") {
            found.credentials = S3Credentials(
                accessKey: access, secretKey: secret, sessionToken: profileValue("aws_session_token"))
        }
        found.region =
            environment["AWS_REGION"].flatMap(nonEmpty) ?? environment["AWS_DEFAULT_REGION"].flatMap(nonEmpty)
            ?? profileValue("region")
        found.endpoint =
            environment["AWS_ENDPOINT_URL_S3"].flatMap(nonEmpty) ?? environment["AWS_ENDPOINT_URL"].flatMap(nonEmpty)
            ?? profileValue("endpoint_url")
        found.caBundle = environment["AWS_CA_BUNDLE"].flatMap(nonEmpty) ?? profileValue("ca_bundle")
        return found
    }

    private static func nonEmpty(_ text: String) -> String? { text.isEmpty ? nil : text }
}

/// An AWS shared configuration file (INI: `[section]` lines, `key = value` lines, `#` and `;`
/// comments); a missing or unreadable file has no sections.
struct SharedConfigFile {
    private var sections: [String: [String: String]] = [:]

    init(path: String) {
        self.init(text: (try? String(contentsOfFile: path, encoding: .utf8)) ?? "")
    }

    init(text: String) {
        var current: String?
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                current = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                continue
            }
            guard let current, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            sections[current, default: [:]][key] = value
        }
    }

    func section(_ name: String) -> [String: String] { sections[name] ?? [:] }
}
