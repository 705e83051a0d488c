import Foundation
import LatchkeyCore

/// `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` (RFC 7523 §2.1): a web or service
/// client an administrator allowed (`grant_types`) presents an assertion signed by an upstream
/// OpenID provider whose assertions the administrator accepts (`latchkey providers add
/// --accept-assertions`), and gets an access token for the user it names, without a browser.
///
/// An identity assertion grant (`typ` `oauth-id-jag+jwt`, draft-ietf-oauth-identity-assertion-authz-grant
/// §3–§4.4, the MCP enterprise-managed authorization extension) is an enterprise IdP's word that
/// its user may reach this server through this client: its `aud` must be this server's issuer
/// alone, its `client_id` the authenticated client, and its `resource` and `scope` bound the token.
/// A plain assertion (`typ` absent or `JWT`) names this server or its token endpoint, and a
/// `client_id`, when it has one, must be the client's.
///
/// - The signature is checked with the provider's keys (from its discovery document's
///   `jwks_uri`); `exp` at most ``maximumLifetime`` ahead; `jti` used once at every instance
///   (``AssertionStore``), so a copy seen by anyone else is worth nothing.
/// - The user is the account linked to the provider's `sub`; else, when the provider is trusted
///   with verified addresses (`--link-verified-email`) and the assertion says `email_verified`,
///   the one account with that confirmed address, which is then linked. No account is created.
/// - The scope is what the assertion's `scope` allows, narrowed by the request's, within what the
///   client may ask for and what the named resources accept. No refresh token (§4.4.3): the
///   client asks the IdP for a new assertion. `cnf.jkt` binds the token to that DPoP key.
///
/// Every refusal of the assertion is `invalid_grant` (RFC 7523 §3.1), with the reason: the client
/// has authenticated, and an administrator allowed it the grant.
struct JWTBearerGrant: TokenGrant {
    let grantType = GrantTypes.jwtBearer
    let parameters: [GrantParameter] = [.required("assertion"), .optional("scope"), .optional("resource")]
    let refusal = "This client may not present assertions as a grant; an administrator must allow it (grant_types)."
    var isGrantedByDefault: Bool { false }
    /// Confidential clients only (draft §9.1): the assertion's `client_id` means something only
    /// if the client proved it is that client.
    func permits(_ type: ClientType) -> Bool { type.isConfidential }

    /// The `typ` of an identity assertion grant (draft §3.1).
    static let identityAssertionType = "oauth-id-jag+jwt"
    /// `authorization_grant_profiles_supported` (draft §7.2).
    static let identityAssertionProfile = "urn:ietf:params:oauth:grant-profile:id-jag"
    /// How far ahead an assertion's `exp` may be: its `jti` is kept that long.
    static let maximumLifetime: TimeInterval = 3600

    func issue(_ request: TokenGrantRequest, using services: TokenGrantServices) async throws -> TokenResponse {
        let (body, client) = (request.body, request.client)
        let asserted = try await IssuerAssertion.verify(
            request.required("assertion"), for: client, proofKey: request.keyThumbprint, using: services)
        let (user, newLink) = try await asserted.account(using: services)

        // The resources: those the request names, within the assertion's `resource` when it has one.
        var named = body.all("resource")
        if let bound = asserted.resources {
            if let other = named.first(where: { !bound.contains($0) }) {
                throw OAuthError(.invalidTarget, "The resource \(other) is not one the assertion is for.")
            }
            if named.isEmpty { named = bound }
        }
        let audience: [ProtectedResource]
        switch try await services.issuance.namedResources(FormParameters(named.map { ("resource", $0) })) {
        case .failure(let error):
            // A resource the IdP named that is not registered here: the assertion is no good here.
            throw body.all("resource").isEmpty
                ? OAuthError.invalidGrant(error.errorDescription ?? "Its resource is not registered here.") : error
        case .success(let found): audience = found
        }

        var scope: ScopeSet
        if let text = body["scope"] {
            guard let requested = ScopeSet(parsing: text) else {
                throw OAuthError.invalidScope("The scope is malformed: scopes are separated by single spaces.")
            }
            if let allowed = asserted.scope, let wider = requested.first(where: { !allowed.contains($0) }) {
                throw OAuthError.invalidScope("The scope \(wider) is not in the assertion's scope.")
            }
            scope = requested
        } else if let allowed = asserted.scope {
            scope = ScopeSet(allowed.filter { client.scopes.contains($0) })
            scope = try services.issuance.scope(scope, for: audience)
        } else {
            throw OAuthError.invalidScope("Neither the request nor the assertion names a scope.")
        }
        if let error = try await services.issuance.checkAllowed(scope, for: client) { throw error }
        if let error = services.issuance.checkScope(scope, against: audience) { throw error }
        guard !scope.isEmpty else {
            throw OAuthError.invalidScope("None of the assertion's scopes is one this client may ask for.")
        }

        // Used once, at any instance: the last check before the token, so a refusal above leaves
        // the assertion usable once its request is mended.
        guard
            try await services.store.recordAssertion(
                hash: RandomToken.hash("grant \(asserted.issuer)\n\(asserted.jti)"),
                expiresAt: asserted.expiresAt.addingTimeInterval(60))
        else {
            services.event(
                .assertionGrantRefused,
                ["client_id": "\(client.id)", "identity_provider": "\(asserted.provider)", "reason": "replayed"])
            throw OAuthError.invalidGrant("This assertion was used before: ask its issuer for a new one.")
        }
        // An account found by its address is linked only now that the assertion is taken.
        if let newLink { try await asserted.link(newLink, using: services) }
        let resources = ResourceSet(audience.map(\.uri))
        let grant = GrantRecord(
            id: services.issuance.newGrantID(), clientID: client.id, userID: user.id, scope: scope, createdAt: services.now,
            authTime: asserted.authTime, resources: resources)
        let issued = try await services.issuance.mintTokens(
            grantID: grant.id, client: client, userID: user.id, accessScope: scope, refreshScope: nil,
            target: TokenTarget(
                audience: audience, granted: resources, authTime: asserted.authTime, keyThumbprint: request.keyThumbprint))
        // Stored only while the account's access is as it was read: a disable or a new password
        // racing the grant wins.
        guard try await services.store.insertGrant(grant, tokens: issued.records, whileAccessEpoch: user.accessEpoch) else {
            throw OAuthError.invalidGrant("The account the assertion names cannot be used now.")
        }
        services.event(
            .tokenIssued,
            [
                "grant_type": "jwt_bearer", "client_type": "\(client.type)", "client_id": "\(client.id)",
                "identity_provider": "\(asserted.provider)", "profile": asserted.isIdentityAssertion ? "id-jag" : "rfc7523",
            ])
        return issued.response
    }
}
