import Foundation

/// What a resource server tells ``BearerTokenValidator`` about itself and its authorization server.
public struct ResourceServerConfiguration: Sendable {
    /// This resource's identifier (RFC 8707 §2, RFC 9728 §2 `resource`): the URI clients send as
    /// `resource` and that access tokens for it carry as `aud`, compared exactly.
    public var resource: String
    /// The authorization server's `issuer` (RFC 8414), compared exactly with a JWT's `iss`.
    public var issuer: String
    /// The scopes this resource understands (RFC 9728 `scopes_supported`).
    public var scopesSupported: [String]
    /// A name for people (RFC 9728 `resource_name`).
    public var resourceName: String?
    /// Where the authorization server's public keys are (`jwks_uri`); `nil` reads it from the
    /// issuer's RFC 8414 metadata. Needed for JWT access tokens (RFC 9068).
    public var jwksURI: URL?
    /// Credentials for the introspection endpoint (RFC 7662), for opaque tokens; `nil` accepts
    /// JWT access tokens only.
    public var introspection: IntrospectionCredentials?
    /// How long a key set is kept before it is read again (an unknown `kid` reads it sooner).
    public var keySetLifetime: TimeInterval = 300
    /// How long an introspection answer is kept (never past the token's `exp`): a revoked token
    /// may be accepted this long.
    public var introspectionCacheLifetime: TimeInterval = 30
    /// The clock tolerance for `exp` and `iat`, in seconds.
    public var clockSkew: TimeInterval = 5
    /// How long one request to the authorization server may take.
    public var requestTimeout: TimeInterval = 5
    /// The most DPoP proofs remembered against replay (RFC 9449 §11.1). A proof is remembered
    /// until it is too old to pass anyway and is never forgotten before: when this many are live,
    /// new proofs are refused until the oldest expire.
    public var dpopProofMemory = 100_000
    /// What the user's sign-in must have reached (RFC 9470 §3, `acr_values`): the token's `acr`
    /// must be one of these, such as Latchkey's `urn:latchkey:acr:2` (a password and a one-time
    /// code). Empty asks nothing. A token that falls short, or says no `acr` (a client's own token),
    /// is answered `401` `insufficient_user_authentication` with these as `acr_values`, for the
    /// client to ask for in a new authorization request (§4).
    public var requiredACRValues: [String] = []
    /// How recent the user's sign-in must be (RFC 9470 §3, `max_age`): at most this many seconds
    /// before the request, by the token's `auth_time` in whole seconds and this server's clock.
    /// `nil` asks nothing. An older sign-in, or a token without `auth_time`, is answered `401`
    /// `insufficient_user_authentication` with this as `max_age`.
    public var maxAuthenticationAge: Int?

    public init(
        resource: String, issuer: String, scopesSupported: [String] = [], resourceName: String? = nil, jwksURI: URL? = nil,
        introspection: IntrospectionCredentials? = nil
    ) {
        self.resource = resource
        self.issuer = issuer
        self.scopesSupported = scopesSupported
        self.resourceName = resourceName
        self.jwksURI = jwksURI
        self.introspection = introspection
    }

    /// The RFC 9728 §3.1 address of this resource's metadata: `/.well-known/oauth-protected-resource`
    /// inserted before the resource's path.
    public var metadataURL: String {
        guard var components = URLComponents(string: resource) else { return resource }
        let path = components.path == "/" ? "" : components.path
        components.path = "/.well-known/oauth-protected-resource" + path
        components.query = nil
        return components.string ?? resource
    }

    /// The path part of ``metadataURL``, for a router.
    public var metadataPath: String { URLComponents(string: metadataURL)?.path ?? "/.well-known/oauth-protected-resource" }

    /// The issuer's RFC 8414 metadata address (`/.well-known/oauth-authorization-server` before the issuer's path).
    var authorizationServerMetadataURL: URL? {
        guard var components = URLComponents(string: issuer) else { return nil }
        let path = components.path == "/" ? "" : components.path
        components.path = "/.well-known/oauth-authorization-server" + path
        return components.url
    }
}

/// A confidential client's credentials for the introspection endpoint (RFC 7662 §2.1), sent with
/// HTTP Basic authentication.
public struct IntrospectionCredentials: Sendable {
    /// `introspection_endpoint`.
    public var endpoint: URL
    public var clientID: String
    public var clientSecret: String

    public init(endpoint: URL, clientID: String, clientSecret: String) {
        self.endpoint = endpoint
        self.clientID = clientID
        self.clientSecret = clientSecret
    }
}
