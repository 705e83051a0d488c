import Foundation
import LatchkeyCore
import Logging

/// Hashes and checks user passwords (bcrypt in production; see `LatchkeyHTTP`).
public protocol PasswordHasher: Sendable {
    func hash(_ password: String) throws -> String
    func verify(_ password: String, hash: String) -> Bool
}

/// The authorization server's logic over plain types: each endpoint takes a parsed request and
/// returns a response value or an ``OAuthError``. No HTTP framework and no database driver here.
public struct AuthorizationServer: Sendable {
    public let store: any Store
    public let configuration: ServerConfiguration
    public let passwordHasher: any PasswordHasher
    /// Security events (`code.replay_detected`, `refresh.reuse_detected`, sign-ins): never a secret value.
    public let logger: Logger
    /// A password hash of a random value nobody knows, checked when the username is unknown so that
    /// both sign-in failures take as long (SECURITY.md T62).
    let unknownUserHash: String

    public init(
        store: any Store, configuration: ServerConfiguration, passwordHasher: any PasswordHasher,
        logger: Logger = Logger(label: "latchkey")
    ) {
        self.store = store
        self.configuration = configuration
        self.passwordHasher = passwordHasher
        self.logger = logger
        self.unknownUserHash = (try? passwordHasher.hash(RandomToken.randomBase64URL(byteCount: 16))) ?? ""
    }

    var now: Date { configuration.now() }
    var issuer: String { configuration.issuer }

    /// RFC 8414 metadata for what this server supports now.
    /// `token` (implicit) is listed only while some client is registered for it (SECURITY.md T53, T68).
    public func metadata() async throws -> AuthorizationServerMetadata {
        let implicit = try await store.clients().contains { $0.type == .browser && $0.allowImplicit }
        return AuthorizationServerMetadata(
            issuer: issuer,
            authorizationEndpoint: issuer + "/oauth2/authorize",
            tokenEndpoint: issuer + "/oauth2/token",
            userinfoEndpoint: issuer + "/userinfo",
            revocationEndpoint: issuer + "/oauth2/revoke",
            introspectionEndpoint: issuer + "/oauth2/introspect",
            scopesSupported: try await store.scopeCatalogue().map(\.name),
            responseTypesSupported: implicit ? ["code", "token"] : ["code"],
            grantTypesSupported: ["authorization_code", "refresh_token", "client_credentials"] + (implicit ? ["implicit"] : []),
            tokenEndpointAuthMethodsSupported: ["none", "client_secret_basic", "client_secret_post"])
    }

    /// Logs a security event with its fields (never a token, code, secret or password).
    func event(_ name: String, _ metadata: Logger.Metadata = [:]) {
        logger.notice("\(name)", metadata: metadata.merging(["event": "\(name)"]) { a, _ in a })
    }
}
