import Foundation
import LatchkeyCore

/// `grant_type=authorization_code` (RFC 6749 §4.1.3, RFC 7636 §4.5–4.6).
///
///
/// Every check runs before the code is consumed, so a request with a wrong verifier neither
/// burns the code (docs/threat-model.md T05) nor, on a used code, revokes anything (T11). A fully valid
/// request for a used code is a replay: the grant it produced is revoked (§4.1.2, T09).
struct AuthorizationCodeGrant: TokenGrant {
    let grantType = "authorization_code"
    let parameters: [GrantParameter] = [
        .required("code"), .optional("redirect_uri"), .optional("code_verifier"), .optional("resource"),
    ]
    let refusal = "A service client uses the client_credentials grant only."
    func permits(_ type: ClientType) -> Bool { type != .service }

    func issue(_ request: TokenGrantRequest, on server: AuthorizationServer) async throws -> TokenResponse {
        let (body, client, store) = (request.body, request.client, server.store)
        let code = request.required("code")
        let invalid = OAuthError.invalidGrant("The authorization code is invalid, expired or already used.")
        guard let record = try await store.authorizationCode(hash: CodeHash(of: code)),
            record.clientID == client.id
        else { throw invalid }

        // redirect_uri: "REQUIRED, if the redirect_uri parameter was included in the authorization
        // request ... and their values MUST be identical" (§4.1.3).
        let redirectURI = body["redirect_uri"]
        if let expected = record.redirectURIParameter {
            guard redirectURI == expected else {
                throw OAuthError.invalidGrant("The redirect_uri must be identical to the one in the authorization request.")
            }
        } else if let redirectURI, redirectURI != record.redirectURI {
            throw OAuthError.invalidGrant("The redirect_uri does not match the authorization request.")
        }

        // PKCE: present if and only if a challenge was sent (RFC 9700 §4.8.2 against downgrade).
        let verifierText = body["code_verifier"]
        if let challenge = record.codeChallenge.flatMap(CodeChallenge.init) {
            guard let verifierText else { throw OAuthError.invalidGrant("The code_verifier parameter is missing.") }
            guard let verifier = CodeVerifier(verifierText) else {
                throw OAuthError.invalidGrant("The code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~.")
            }
            guard challenge.isSatisfied(by: verifier) else {
                throw OAuthError.invalidGrant("The code_verifier does not match the code_challenge.")
            }
        } else if verifierText != nil {
            throw OAuthError.invalidGrant("A code_verifier was sent but the authorization request had no code_challenge.")
        }

        if record.consumedAt != nil {
            try await revokeAfterCodeReplay(record, on: server)
            throw invalid
        }
        guard server.now < record.expiresAt else { throw invalid }

        // RFC 8707 §2.2: `resource` picks, among the resources the user authorized, the access
        // token's audience; the grant (and its refresh token) keeps them all.
        let audience = try await server.tokenAudience(body, granted: record.resources)
        let grant = GrantRecord(
            id: server.newGrantID(), clientID: client.id, userID: record.userID, scope: record.scope,
            createdAt: server.now, authTime: record.authTime, resources: record.resources)
        var issued = try await server.mintTokens(
            grantID: grant.id, client: client, userID: record.userID,
            accessScope: try server.scope(record.scope, for: audience), refreshScope: record.scope,
            target: TokenTarget(audience: audience, granted: record.resources, authTime: record.authTime))
        // Signed before the code is spent, so that a signing failure leaves the code unused.
        if record.scope.contains("openid") {
            issued.response.idToken = try await server.idToken(
                client: client, userID: record.userID, authTime: record.authTime, nonce: record.nonce,
                accessToken: issued.response.accessToken)
        }
        guard
            try await store.redeemAuthorizationCode(
                codeHash: record.codeHash, grant: grant, tokens: issued.records, at: server.now)
        else {
            // Lost a race with another redemption of the same code: that is a replay too.
            if let current = try await store.authorizationCode(hash: record.codeHash) {
                try await revokeAfterCodeReplay(current, on: server)
            }
            throw invalid
        }
        server.event(
            "token.issued",
            [
                "grant_type": "authorization_code", "client_type": "\(client.type)", "client_id": "\(client.id)",
                "grant_id": "\(grant.id)",
            ])
        return issued.response
    }

    private func revokeAfterCodeReplay(_ record: AuthorizationCodeRecord, on server: AuthorizationServer) async throws {
        guard let grantID = record.grantID else { return }
        try await server.store.revokeGrant(id: grantID, at: server.now)
        server.event("code.replay_detected", ["client_id": "\(record.clientID)", "grant_id": "\(grantID)"])
    }
}
