import Foundation
import LatchkeyCore

/// How the access tokens for a resource are written.
public enum AccessTokenFormat: String, Sendable, Codable, CaseIterable {
    /// A random string that only Latchkey can read: the resource asks the introspection
    /// endpoint (RFC 7662). Revocation takes effect at once.
    case opaque
    /// A signed JWT (RFC 9068, `typ: at+jwt`) the resource validates with the published keys,
    /// without calling Latchkey; revocation takes effect when the token expires.
    case jwt
}

/// A registered protected resource (an API, an MCP server): what a `resource` parameter
/// (RFC 8707) may name.
public struct ProtectedResource: Sendable, Equatable {
    /// The resource indicator: an absolute URI, compared exactly.
    public var uri: String
    /// The name the consent page shows.
    public var name: String
    /// The scopes the resource accepts; a request that names the resource may ask for these
    /// (and for the OpenID Connect scopes, which concern the user's identity, not the resource).
    public var scopes: ScopeSet
    public var tokenFormat: AccessTokenFormat
    /// The lifetime of the access tokens for this resource, in seconds; `nil` for the default
    /// (the client's lifetime for opaque tokens, ``defaultJWTLifetime`` for JWTs).
    public var accessTokenLifetime: Int?
    /// What signs its JWT access tokens (`access_token_signing_alg`): RS256, which RFC 9068 §2.1
    /// asks every resource server to accept, or ES256, far cheaper to sign (client credentials ran
    /// about three times as fast: docs/performance.md).
    public var tokenSigningAlgorithm: SigningAlgorithm
    public var createdAt: Date

    public init(
        uri: String, name: String, scopes: ScopeSet, tokenFormat: AccessTokenFormat = .opaque,
        accessTokenLifetime: Int? = nil, tokenSigningAlgorithm: SigningAlgorithm = .rs256, createdAt: Date
    ) {
        self.tokenSigningAlgorithm = tokenSigningAlgorithm
        self.uri = uri
        self.name = name
        self.scopes = scopes
        self.tokenFormat = tokenFormat
        self.accessTokenLifetime = accessTokenLifetime
        self.createdAt = createdAt
    }

    /// A JWT access token cannot be revoked before it expires, so its default life is short: 5 minutes.
    public static let defaultJWTLifetime = 300
    /// The longest lifetime a JWT access token may be given (one day); retired signing keys stay
    /// published at least this long.
    public static let maximumJWTLifetime = 86_400
}
