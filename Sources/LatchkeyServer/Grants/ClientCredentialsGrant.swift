import Foundation
import LatchkeyCore

extension AuthorizationServer {
    /// `grant_type=client_credentials` (RFC 6749 §4.4), for `service` clients only: an access token
    /// with no user and no refresh token (§4.4.3, which we make a MUST), for the registered scopes
    /// or a subset of them.
    func clientCredentialsGrant(_ body: FormParameters, client: Client) async throws -> TokenResponse {
        guard client.type == .service else {
            throw OAuthError(.unauthorizedClient, "Only service clients may use the client_credentials grant.")
        }
        var scope = client.scopes
        if let text = body["scope"] {
            guard let requested = ScopeSet(parsing: text) else {
                throw OAuthError.invalidScope("The scope is malformed: scopes are separated by single spaces.")
            }
            if let error = try await checkAllowed(requested, for: client) { throw error }
            scope = requested
        }
        let grant = GrantRecord(id: newGrantID(), clientID: client.id, userID: nil, scope: scope, createdAt: now)
        let issued = mintTokens(grantID: grant.id, clientID: client.id, userID: nil, accessScope: scope, refreshScope: nil)
        try await store.insertGrant(grant, tokens: issued.records)
        event("token.issued", ["grant_type": "client_credentials", "client_id": "\(client.id)"])
        return issued.response
    }
}
