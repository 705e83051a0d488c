import Foundation
import LatchkeyCore

/// `grant_type=client_credentials` (RFC 6749 §4.4), for `service` clients only: an access token
/// with no user and no refresh token (§4.4.3, which we make a MUST), for the registered scopes
/// or a subset of them.
struct ClientCredentialsGrant: TokenGrant {
    let grantType = "client_credentials"
    let parameters: [GrantParameter] = [.optional("scope"), .optional("resource")]
    let refusal = "Only service clients may use the client_credentials grant."
    func permits(_ type: ClientType) -> Bool { type == .service }

    func issue(_ request: TokenGrantRequest, using services: TokenGrantServices) async throws -> TokenResponse {
        let (body, client) = (request.body, request.client)
        let audience: [ProtectedResource]
        switch try await services.issuance.namedResources(body) {
        case .failure(let error): throw error
        case .success(let named): audience = named
        }
        var scope = client.scopes
        if let text = body["scope"] {
            guard let requested = ScopeSet(parsing: text) else {
                throw OAuthError.invalidScope("The scope is malformed: scopes are separated by single spaces.")
            }
            if let error = try await services.issuance.checkAllowed(requested, for: client) { throw error }
            if let error = services.issuance.checkScope(requested, against: audience) { throw error }
            scope = requested
        } else {
            // No scope asked: the registered scopes that the named resources accept (RFC 8707 §2).
            scope = try services.issuance.scope(scope, for: audience)
        }
        let resources = ResourceSet(audience.map(\.uri))
        let grant = GrantRecord(
            id: services.issuance.newGrantID(), clientID: client.id, userID: nil, scope: scope, createdAt: services.now,
            resources: resources)
        let issued = try await services.issuance.mintTokens(
            grantID: grant.id, client: client, userID: nil, accessScope: scope, refreshScope: nil,
            target: TokenTarget(audience: audience, granted: resources, keyThumbprint: request.keyThumbprint))
        try await services.store.insertGrant(grant, tokens: issued.records)
        services.event(
            .tokenIssued, ["grant_type": "client_credentials", "client_type": "\(client.type)", "client_id": "\(client.id)"])
        return issued.response
    }
}
