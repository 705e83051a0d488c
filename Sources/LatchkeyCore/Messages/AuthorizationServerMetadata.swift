/// Authorization server metadata (RFC 8414 §2), served at `/.well-known/oauth-authorization-server`.
public struct AuthorizationServerMetadata: Sendable, Equatable, Codable {
    public var issuer: String
    public var authorizationEndpoint: String
    public var tokenEndpoint: String
    public var userinfoEndpoint: String?
    public var revocationEndpoint: String?
    public var introspectionEndpoint: String?
    public var scopesSupported: [String]
    public var responseTypesSupported: [String]
    public var grantTypesSupported: [String]
    public var codeChallengeMethodsSupported: [String]
    public var tokenEndpointAuthMethodsSupported: [String]
    /// RFC 9207 §3: `iss` is in every authorization response.
    public var authorizationResponseIssParameterSupported: Bool

    public init(
        issuer: String, authorizationEndpoint: String, tokenEndpoint: String, userinfoEndpoint: String? = nil,
        revocationEndpoint: String? = nil, introspectionEndpoint: String? = nil, scopesSupported: [String],
        responseTypesSupported: [String], grantTypesSupported: [String],
        codeChallengeMethodsSupported: [String] = [CodeChallenge.method],
        tokenEndpointAuthMethodsSupported: [String], authorizationResponseIssParameterSupported: Bool = true
    ) {
        self.issuer = issuer
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.userinfoEndpoint = userinfoEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.introspectionEndpoint = introspectionEndpoint
        self.scopesSupported = scopesSupported
        self.responseTypesSupported = responseTypesSupported
        self.grantTypesSupported = grantTypesSupported
        self.codeChallengeMethodsSupported = codeChallengeMethodsSupported
        self.tokenEndpointAuthMethodsSupported = tokenEndpointAuthMethodsSupported
        self.authorizationResponseIssParameterSupported = authorizationResponseIssParameterSupported
    }

    enum CodingKeys: String, CodingKey {
        case issuer
        case authorizationEndpoint = "authorization_endpoint"
        case tokenEndpoint = "token_endpoint"
        case userinfoEndpoint = "userinfo_endpoint"
        case revocationEndpoint = "revocation_endpoint"
        case introspectionEndpoint = "introspection_endpoint"
        case scopesSupported = "scopes_supported"
        case responseTypesSupported = "response_types_supported"
        case grantTypesSupported = "grant_types_supported"
        case codeChallengeMethodsSupported = "code_challenge_methods_supported"
        case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
        case authorizationResponseIssParameterSupported = "authorization_response_iss_parameter_supported"
    }
}
