import LatchkeyCore

/// The grants the token endpoint knows, by `grant_type`: the one place a grant is added.
public struct GrantRegistry: Sendable {
    /// The grants in the order the metadata lists them.
    public let grants: [any TokenGrant]
    private let byType: [String: any TokenGrant]

    public init(_ grants: [any TokenGrant]) {
        self.grants = grants
        self.byType = Dictionary(grants.map { ($0.grantType, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Everything Latchkey supports at the token endpoint.
    public static let standard = GrantRegistry([
        AuthorizationCodeGrant(),
        RefreshTokenGrant(),
        ClientCredentialsGrant(),
        DeviceCodeGrant(),
        TokenExchangeGrant(),
        JWTBearerGrant(),
    ])

    /// The `grant_type` values, for `grant_types_supported` (RFC 8414 §2).
    public var grantTypes: [String] { grants.map(\.grantType) }

    /// Finds the grant for `grantType`, checks that `client` may use it (its `grant_types` lists
    /// it, and the grant permits its kind) and that the required
    /// parameters are present, and runs it.
    func issue(
        grantType: String, body: FormParameters, client: Client, keyThumbprint: String? = nil, using services: TokenGrantServices
    ) async throws -> TokenResponse {
        guard let grant = byType[grantType] else {
            throw OAuthError(.unsupportedGrantType, "The grant_type \(grantType) is not supported.")
        }
        // The client's own list (`grant_types`, RFC 7591 §2) decides; the grant's rule on kinds of
        // client holds as well, whatever a list says.
        guard client.grantTypes.contains(grantType), grant.permits(client.type) else {
            throw OAuthError(.unauthorizedClient, grant.refusal)
        }
        if let missing = grant.parameters.first(where: { $0.isRequired && body[$0.name] == nil }) {
            throw OAuthError.invalidRequest("The \(missing.name) parameter is missing.")
        }
        return try await grant.issue(TokenGrantRequest(body: body, client: client, keyThumbprint: keyThumbprint), using: services)
    }
}
