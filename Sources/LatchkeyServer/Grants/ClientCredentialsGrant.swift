import Foundation
import LatchkeyCore

/// `grant_type=client_credentials` (RFC 6749 §4.4), for `service` clients only: an access token
/// with no user and no refresh token (§4.4.3, which we make a MUST), for the registered scopes
/// or a subset of them.
struct ClientCredentialsGrant: TokenGrant {
    let grantType = "client_credentials"
    let parameters: [GrantParameter] = [.optional("scope")]
    let refusal = "Only service clients may use the client_credentials grant."
    func permits(_ type: ClientType) -> Bool { type == .service }

    func issue(_ request: TokenGrantRequest, on server: AuthorizationServer) async throws -> TokenResponse {
        let (body, client) = (request.body, request.client)
        var scope = client.scopes
        if let text = body["scope"] {
            guard let requested = ScopeSet(parsing: text) else {
                throw OAuthError.invalidScope("The scope is malformed: scopes are separated by single spaces.")
            }
            if let error = try await server.checkAllowed(requested, for: client) { throw error }
            scope = requested
        }
        let grant = GrantRecord(id: server.newGrantID(), clientID: client.id, userID: nil, scope: scope, createdAt: server.now)
        let issued = server.mintTokens(grantID: grant.id, client: client, userID: nil, accessScope: scope, refreshScope: nil)
        try await server.store.insertGrant(grant, tokens: issued.records)
        server.event("token.issued", ["grant_type": "client_credentials", "client_id": "\(client.id)"])
        return issued.response
    }
}
