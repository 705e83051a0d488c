import Foundation
import LatchkeyCore

/// `grant_type=refresh_token` (RFC 6749 §6) with rotation and reuse detection (RFC 9700 §4.14.2).
///
/// Each refresh returns a new pair and retires the presented token. Presenting a retired token
/// again revokes the whole grant, except for one tolerance (docs/threat-model.md decision 3): within
/// ``ServerConfiguration/refreshGracePeriod`` of its rotation, while its successor has never been
/// used, the same client gets a fresh pair and the unused successor is retired instead, so a
/// client that lost a response is not signed out.
struct RefreshTokenGrant: TokenGrant {
    let grantType = "refresh_token"
    let parameters: [GrantParameter] = [.required("refresh_token"), .optional("scope"), .optional("resource")]
    let refusal = "This client may not use refresh tokens."
    // A service client is never issued a refresh token.
    func permits(_ type: ClientType) -> Bool { type != .service }

    func issue(_ request: TokenGrantRequest, using services: TokenGrantServices) async throws -> TokenResponse {
        let (body, client, store) = (request.body, request.client, services.store)
        let presented = request.required("refresh_token")
        let invalid = OAuthError.invalidGrant("The refresh token is invalid, expired or revoked.")
        guard let token = try await store.token(presented: presented), token.kind == .refresh,
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
        guard token.revokedAt == nil, !token.grantEnded, services.now < token.expiresAt else { throw invalid }
        // RFC 9449 §5: a refresh token bound to a DPoP key is used only with a proof made with it.
        if let bound = token.keyThumbprint, bound != request.keyThumbprint {
            throw OAuthError(
                .invalidDPoPProof,
                request.keyThumbprint == nil
                    ? "This refresh token is bound to a DPoP key: send a DPoP proof made with it."
                    : "The DPoP proof was made with another key than the one this refresh token is bound to.")
        }

        // RFC 8707 §2.2: the access token may be for fewer of the grant's resources.
        let audience = try await services.issuance.tokenAudience(body, granted: token.audience)
        accessScope = try services.issuance.scope(accessScope, for: audience)
        let wantsOpenID = accessScope.contains("openid") && token.userID != nil
        let grant =
            wantsOpenID || audience.contains(where: { $0.tokenFormat == .jwt })
            ? try await store.grant(id: token.grantID) : nil
        let authTime = grant?.authTime
        var issued = try await services.issuance.mintTokens(
            grantID: token.grantID, client: client, userID: token.userID, accessScope: accessScope,
            refreshScope: token.scope,
            target: TokenTarget(
                audience: audience, granted: token.audience, authTime: authTime, amr: grant?.amr,
                keyThumbprint: request.keyThumbprint))
        // A new ID token with the original sign-in's `auth_time` (OpenID Connect Core §12.2).
        if wantsOpenID, let userID = token.userID {
            issued.response.idToken = try await services.issuance.idToken(
                client: client, userID: userID, authTime: authTime, amr: grant?.amr, nonce: nil,
                accessToken: issued.response.accessToken, sid: grant?.sid)
        }
        if token.rotatedAt == nil,
            try await store.rotateRefreshToken(hash: token.hash, successors: issued.records, at: services.now)
        {
            services.event(
                .tokenIssued,
                [
                    "grant_type": "refresh_token", "client_type": "\(client.type)", "client_id": "\(client.id)",
                    "grant_id": "\(token.grantID)",
                ])
            return issued.response
        }
        // Already rotated (maybe a moment ago by a concurrent request): within grace, or reuse. A
        // rotation refused because the grant was revoked meanwhile (or its user disabled) is
        // neither: the token is simply dead.
        let current = try await store.token(hash: token.hash) ?? token
        guard current.revokedAt == nil, !current.grantEnded else { throw invalid }
        // A grace period of 0 is strict rotation: never a second pair (not even when another
        // instance's clock makes the rotation look like it lies in the future).
        let grace = services.configuration.refreshGracePeriod
        if grace > 0, let rotatedAt = current.rotatedAt, services.now.timeIntervalSince(rotatedAt) < grace,
            let successorHash = current.successorHash,
            let successor = try await store.token(hash: successorHash),
            successor.rotatedAt == nil, successor.revokedAt == nil,
            try await store.reissueWithinGrace(
                originalHash: token.hash, retiredHash: successorHash,
                successors: issued.records, at: services.now)
        {
            services.event(.refreshGraceReissued, ["client_id": "\(client.id)", "grant_id": "\(token.grantID)"])
            return issued.response
        }
        try await store.revokeGrant(id: token.grantID, at: services.now)
        services.event(.refreshReuseDetected, ["client_id": "\(client.id)", "grant_id": "\(token.grantID)"])
        throw invalid
    }
}
