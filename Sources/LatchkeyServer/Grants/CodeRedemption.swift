import Foundation
import LatchkeyCore

extension TokenGrantServices {
    /// Spends a checked authorization code record (an authorization code, or an approved device
    /// request's, RFC 8628 §3.5) for tokens, once. A used record is a replay: the grant it
    /// produced is revoked (RFC 6749 §4.1.2, docs/threat-model.md T09), and so is a lost race
    /// with another redemption.
    func redeem(_ record: AuthorizationCodeRecord, request: TokenGrantRequest, grantType: String) async throws
        -> TokenResponse
    {
        let (client, body) = (request.client, request.body)
        let invalid = OAuthError.invalidGrant(
            grantType == AuthorizationServer.deviceCodeGrantType
                ? "The device code is invalid, expired or already used."
                : "The authorization code is invalid, expired or already used.")
        if record.consumedAt != nil {
            try await revokeAfterCodeReplay(record)
            throw invalid
        }
        guard now < record.expiresAt else { throw invalid }

        // RFC 8707 §2.2: `resource` picks, among the resources the user authorized, the access
        // token's audience; the grant (and its refresh token) keeps them all.
        let audience = try await issuance.tokenAudience(body, granted: record.resources)
        let grant = GrantRecord(
            id: issuance.newGrantID(), clientID: client.id, userID: record.userID, scope: record.scope, createdAt: now,
            authTime: record.authTime, resources: record.resources, amr: record.amr, sid: record.sid)
        var issued = try await issuance.mintTokens(
            grantID: grant.id, client: client, userID: record.userID,
            accessScope: try issuance.scope(record.scope, for: audience), refreshScope: record.scope,
            target: TokenTarget(
                audience: audience, granted: record.resources, authTime: record.authTime, amr: record.amr,
                keyThumbprint: request.keyThumbprint))
        // Signed before the code is spent, so that a signing failure leaves the code unused.
        if record.scope.contains("openid") {
            issued.response.idToken = try await issuance.idToken(
                client: client, userID: record.userID, authTime: record.authTime, amr: record.amr, nonce: record.nonce,
                accessToken: issued.response.accessToken, sid: record.sid)
        }
        guard try await store.redeemAuthorizationCode(codeHash: record.codeHash, grant: grant, tokens: issued.records, at: now)
        else {
            if let current = try await store.authorizationCode(hash: record.codeHash) {
                try await revokeAfterCodeReplay(current)
            }
            throw invalid
        }
        event(
            .tokenIssued,
            [
                "grant_type": "\(grantType)", "client_type": "\(client.type)", "client_id": "\(client.id)",
                "grant_id": "\(grant.id)",
            ])
        return issued.response
    }

    private func revokeAfterCodeReplay(_ record: AuthorizationCodeRecord) async throws {
        guard let grantID = record.grantID else { return }
        try await store.revokeGrant(id: grantID, at: now)
        event(.codeReplayDetected, ["client_id": "\(record.clientID)", "grant_id": "\(grantID)"])
    }
}
