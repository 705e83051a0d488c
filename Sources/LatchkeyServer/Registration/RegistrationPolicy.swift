import Foundation

/// Who may register a client at the registration endpoint (RFC 7591), `serve --dynamic-registration`.
public struct DynamicRegistrationPolicy: Sendable {
    public enum Mode: String, Sendable, CaseIterable {
        /// No registration endpoint: only administrators register clients (the default).
        case off
        /// Anyone may register a public native client whose redirect URIs are loopback or a
        /// private-use scheme: the kind of client an MCP host or a CLI is, and one that cannot
        /// send a browser to somebody else's web site.
        case open
        /// Only with an initial access token an administrator made (`latchkey registration-tokens
        /// create`); such a registration may also be a web app with a secret.
        case initialAccessToken = "initial-access-token"
    }

    public var mode: Mode = .off
    /// A self-registered client that nobody has used this long is deleted by housekeeping.
    public var unusedRetention: TimeInterval = ExpiryPurge.defaultUnusedRegistrationRetention
    /// Registrations allowed from one client address in one ``window``.
    public var registrationsPerAddress = 20
    /// Registrations allowed from everyone together in one ``window``: many addresses (a botnet,
    /// an IPv6 range) cannot fill the store either.
    public var registrationsOverall = 1_000
    public var window: TimeInterval = 3_600

    public init(mode: Mode = .off) { self.mode = mode }
}
