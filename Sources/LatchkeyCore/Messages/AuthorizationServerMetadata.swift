/// Authorization server metadata (RFC 8414 §2) with the OpenID Provider members (OpenID Connect
/// Discovery §3), served alike at `/.well-known/oauth-authorization-server` and
/// `/.well-known/openid-configuration`, so the two documents always agree.
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
    /// `jwks_uri`: the public signing keys.
    public var jwksURI: String?
    /// `end_session_endpoint` (OpenID Connect RP-Initiated Logout §2.1).
    public var endSessionEndpoint: String?
    /// `subject_types_supported`: `public` (every client sees the same `sub`).
    public var subjectTypesSupported: [String]?
    /// `id_token_signing_alg_values_supported`.
    public var idTokenSigningAlgValuesSupported: [String]?
    /// `claims_supported`.
    public var claimsSupported: [String]?
    /// `response_modes_supported`.
    public var responseModesSupported: [String]?
    /// `authorization_grant_profiles_supported` (draft-ietf-oauth-identity-assertion-authz-grant
    /// §7.2): `urn:ietf:params:oauth:grant-profile:id-jag` when identity assertion grants are read.
    public var authorizationGrantProfilesSupported: [String]?
    /// `backchannel_logout_supported` and `backchannel_logout_session_supported` (OpenID Connect
    /// Back-Channel Logout 1.0 §2.1): logout tokens are sent, with `sid`.
    public var backchannelLogoutSupported: Bool?
    public var backchannelLogoutSessionSupported: Bool?
    /// `prompt_values_supported` (OpenID Connect Prompt Create §4.1's registry of prompt values).
    public var promptValuesSupported: [String]?
    /// `acr_values_supported` (OpenID Connect Discovery §3): the authentication context classes
    /// the server states in `acr` and honours in `acr_values`.
    public var acrValuesSupported: [String]?
    /// `claims_parameter_supported`, `request_parameter_supported`, `request_uri_parameter_supported`: all false.
    public var claimsParameterSupported: Bool?
    public var requestParameterSupported: Bool?
    public var requestURIParameterSupported: Bool?
    /// `registration_endpoint` (RFC 7591 §3), when clients may register themselves.
    public var registrationEndpoint: String?
    /// `client_id_metadata_document_supported` (OAuth Client ID Metadata Document §6): whether an
    /// `https` URL may be given as `client_id`.
    public var clientIDMetadataDocumentSupported: Bool?
    /// `pushed_authorization_request_endpoint` (RFC 9126 §5): where a client pushes its
    /// authorization request before sending the browser.
    public var pushedAuthorizationRequestEndpoint: String?
    /// `require_pushed_authorization_requests` (RFC 9126 §5): whether every authorization request
    /// must be pushed first.
    public var requirePushedAuthorizationRequests: Bool?
    /// `device_authorization_endpoint` (RFC 8628 §4): where a device without a usable browser
    /// asks for a user code.
    public var deviceAuthorizationEndpoint: String?
    /// `dpop_signing_alg_values_supported` (RFC 9449 §5.1): the algorithms DPoP proofs may use.
    public var dpopSigningAlgValuesSupported: [String]?
    /// `token_endpoint_auth_signing_alg_values_supported` (RFC 8414 §2): the algorithms client
    /// assertions (`private_key_jwt`) may be signed with.
    public var tokenEndpointAuthSigningAlgValuesSupported: [String]?
    /// `revocation_endpoint_auth_methods_supported`, `introspection_endpoint_auth_methods_supported`
    /// (RFC 8414 §2): the same as the token endpoint's.
    public var revocationEndpointAuthMethodsSupported: [String]?
    public var introspectionEndpointAuthMethodsSupported: [String]?
    /// `revocation_endpoint_auth_signing_alg_values_supported`,
    /// `introspection_endpoint_auth_signing_alg_values_supported` (RFC 8414 §2).
    public var revocationEndpointAuthSigningAlgValuesSupported: [String]?
    public var introspectionEndpointAuthSigningAlgValuesSupported: [String]?

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
        case jwksURI = "jwks_uri"
        case endSessionEndpoint = "end_session_endpoint"
        case subjectTypesSupported = "subject_types_supported"
        case idTokenSigningAlgValuesSupported = "id_token_signing_alg_values_supported"
        case claimsSupported = "claims_supported"
        case responseModesSupported = "response_modes_supported"
        case authorizationGrantProfilesSupported = "authorization_grant_profiles_supported"
        case backchannelLogoutSupported = "backchannel_logout_supported"
        case backchannelLogoutSessionSupported = "backchannel_logout_session_supported"
        case promptValuesSupported = "prompt_values_supported"
        case acrValuesSupported = "acr_values_supported"
        case claimsParameterSupported = "claims_parameter_supported"
        case requestParameterSupported = "request_parameter_supported"
        case requestURIParameterSupported = "request_uri_parameter_supported"
        case registrationEndpoint = "registration_endpoint"
        case clientIDMetadataDocumentSupported = "client_id_metadata_document_supported"
        case pushedAuthorizationRequestEndpoint = "pushed_authorization_request_endpoint"
        case requirePushedAuthorizationRequests = "require_pushed_authorization_requests"
        case deviceAuthorizationEndpoint = "device_authorization_endpoint"
        case dpopSigningAlgValuesSupported = "dpop_signing_alg_values_supported"
        case tokenEndpointAuthSigningAlgValuesSupported = "token_endpoint_auth_signing_alg_values_supported"
        case revocationEndpointAuthMethodsSupported = "revocation_endpoint_auth_methods_supported"
        case introspectionEndpointAuthMethodsSupported = "introspection_endpoint_auth_methods_supported"
        case revocationEndpointAuthSigningAlgValuesSupported = "revocation_endpoint_auth_signing_alg_values_supported"
        case introspectionEndpointAuthSigningAlgValuesSupported = "introspection_endpoint_auth_signing_alg_values_supported"
    }
}
