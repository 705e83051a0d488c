import Crypto
import Foundation
import LatchkeyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where an authorization server's endpoints are: discovered (RFC 8414, OpenID Connect Discovery) or given.
public struct ProviderConfiguration: Sendable, Equatable, Codable {
    /// The issuer identifier, checked against `iss` in redirects and ID tokens; `nil` if the provider has none.
    public var issuer: String?
    public var authorizationEndpoint: URL
    public var tokenEndpoint: URL
    public var userinfoEndpoint: URL?
    public var revocationEndpoint: URL?
    /// Whether every authorization response carries `iss` (RFC 9207 §3); then a missing one is refused.
    public var issParameterSupported: Bool
    /// `jwks_uri`: the keys that sign ID tokens.
    public var jwksURI: URL?
    /// `id_token_signing_alg_values_supported`; `nil` means RS256 only (OpenID Connect Discovery §3).
    public var idTokenSigningAlgorithms: [String]?
    /// `pushed_authorization_request_endpoint` (RFC 9126 §5): when set, sign-ins push their
    /// parameters there and the browser's URL carries only `client_id` and `request_uri`.
    public var pushedAuthorizationRequestEndpoint: URL?
    /// `device_authorization_endpoint` (RFC 8628 §4): where a device without a usable browser
    /// asks for a code for the user to enter elsewhere.
    public var deviceAuthorizationEndpoint: URL?

    public init(
        issuer: String? = nil, authorizationEndpoint: URL, tokenEndpoint: URL, userinfoEndpoint: URL? = nil,
        revocationEndpoint: URL? = nil, issParameterSupported: Bool = false, jwksURI: URL? = nil,
        idTokenSigningAlgorithms: [String]? = nil
    ) {
        self.issuer = issuer
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.userinfoEndpoint = userinfoEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.issParameterSupported = issParameterSupported
        self.jwksURI = jwksURI
        self.idTokenSigningAlgorithms = idTokenSigningAlgorithms
    }

    /// Fitbit's Web API endpoints, from the Fitbit authorization guide.
    public static let fitbit = ProviderConfiguration(
        authorizationEndpoint: URL(string: "https://www.fitbit.com/oauth2/authorize")!,
        tokenEndpoint: URL(string: "https://api.fitbit.com/oauth2/token")!,
        revocationEndpoint: URL(string: "https://api.fitbit.com/oauth2/revoke")!)
}

/// How the client identifies itself at the token endpoint (RFC 6749 §2.3).
public enum ClientAuthentication: Sendable, Equatable {
    /// A public client (native app): `client_id` in the body, no secret.
    case none
    /// A confidential client: HTTP Basic with the form-encoded id and secret (§2.3.1).
    case clientSecretBasic(secret: String)
    /// A confidential client with a key instead of a secret (`private_key_jwt`, RFC 7523 §2.2):
    /// each request carries a fresh `client_assertion` signed ES256 with `key`, whose public half
    /// the server has in the client's `jwks` or `jwks_uri` under `kid`. Its `aud` is the
    /// provider's issuer identifier, or the token endpoint when the issuer is not known.
    case privateKeyJWT(key: P256.Signing.PrivateKey, kid: String?)

    public static func == (left: ClientAuthentication, right: ClientAuthentication) -> Bool {
        switch (left, right) {
        case (.none, .none): true
        case (.clientSecretBasic(let a), .clientSecretBasic(let b)): a == b
        case (.privateKeyJWT(let a, let kidA), .privateKeyJWT(let b, let kidB)):
            a.rawRepresentation == b.rawRepresentation && kidA == kidB
        default: false
        }
    }
}
