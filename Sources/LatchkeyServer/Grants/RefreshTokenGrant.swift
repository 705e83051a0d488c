import Foundation
import LatchkeyCore

extension AuthorizationServer {
    /// `grant_type=refresh_token` (RFC 6749 §6) with rotation and reuse detection (RFC 9700 §4.14.2).
    ///
    /// Each refresh returns a new pair and retires the presented token. Presenting a retired token
    /// again revokes the whole grant, except for one tolerance (SECURITY.md decision 3): within
    /// ``ServerConfiguration/refreshGracePeriod`` of its rotation, while its successor has never been
    /// used, the same client gets a fresh pair and the unused successor is retired instead, so a
    /// client that lost a response is not signed out.
    func refreshTokenGrant(_ body: FormParameters, client: Client) async throws -> TokenResponse {
        guard let presented = body["refresh_token"] else {
            throw OAuthError.invalidRequest("The refresh_token parameter is missing.")
        }
        let invalid = OAuthError.invalidGrant("The refresh token is invalid, expired or revoked.")
        guard let token = try await store.token(hash: RandomToken.hash(presented)), token.kind == .refresh,
            token.clientID == client.id
        else { throw invalid }

        // A narrower scope may be asked for the access token; the refresh token keeps the grant's (§6).
        var accessScope = token.scope
        if let scopeText = body["scope"] {
            guard let requested = ScopeSet(parsing: scopeText), requested.isSubset(of: token.scope) else {
                throw OAuthError.invalidScope("A refresh may not ask for a scope that was not granted.")
            }
            accessScope = requested
        }
        guard token.revokedAt == nil, now < token.expiresAt else { throw invalid }

        let issued = mintTokens(
            grantID: token.grantID, clientID: client.id, userID: token.userID, accessScope: accessScope,
            refreshScope: token.scope)
        if token.rotatedAt == nil,
            try await store.rotateRefreshToken(hash: token.hash, successors: issued.records, at: now)
        {
            event("token.issued", ["grant_type": "refresh_token", "client_id": "\(client.id)", "grant_id": "\(token.grantID)"])
            return issued.response
        }
        // Already rotated (maybe a moment ago by a concurrent request): within grace, or reuse.
        let current = try await store.token(hash: token.hash) ?? token
        if let rotatedAt = current.rotatedAt, now.timeIntervalSince(rotatedAt) < configuration.refreshGracePeriod,
            let successorHash = current.successorHash,
            let successor = try await store.token(hash: successorHash),
            successor.rotatedAt == nil, successor.revokedAt == nil,
            try await store.reissueWithinGrace(
                originalHash: token.hash, retiredHash: successorHash, successors: issued.records, at: now)
        {
            event("refresh.grace_reissued", ["client_id": "\(client.id)", "grant_id": "\(token.grantID)"])
            return issued.response
        }
        try await store.revokeGrant(id: token.grantID, at: now)
        event("refresh.reuse_detected", ["client_id": "\(client.id)", "grant_id": "\(token.grantID)"])
        throw invalid
    }
}
