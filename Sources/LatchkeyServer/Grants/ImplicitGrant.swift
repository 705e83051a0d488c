import Foundation
import LatchkeyCore

extension AuthorizationEndpoint {
    /// The lifetimes a user may choose for an implicit-grant token, as Fitbit offers: one day up to a year.
    public static let implicitLifetimes: [(seconds: Int, label: String)] = [
        (86_400, "1 day"), (604_800, "1 week"), (2_592_000, "30 days"), (31_536_000, "1 year"),
    ]

    /// The implicit grant (RFC 6749 §4.2), for `browser` clients registered with `--allow-implicit`:
    /// an access token in the redirect's fragment, never a refresh token (§4.2.2).
    func issueImplicitToken(
        for pending: PendingAuthorization, user: DecidingUser, scope: ScopeSet, lifetime: TimeInterval, authTime: Date
    ) async throws -> AuthorizationStep {
        let userID = user.id
        // How and when the user signed in, for introspection's acr and auth_time.
        let grant = GrantRecord(
            id: issuance.newGrantID(), clientID: pending.clientID, userID: userID, scope: scope, createdAt: now,
            authTime: authTime, amr: user.amr)
        let accessToken = SplitToken.generate(.accessToken, issuedAt: now)
        let record = TokenRecord(
            hash: TokenHash(issued: accessToken), kind: .access, grantID: grant.id, clientID: pending.clientID,
            userID: userID, scope: scope, createdAt: now, expiresAt: now.addingTimeInterval(lifetime),
            verifierDigest: accessToken.verifierDigest)
        guard try await codes.insertGrant(grant, tokens: [record], whileAccessEpoch: user.accessEpoch) else {
            event(.authorizationAccessChanged, ["client_id": "\(pending.clientID)", "user_id": "\(userID)"])
            return errorResponse(Self.accessChanged, for: pending)
        }
        event(
            .tokenIssued,
            ["grant_type": "implicit", "client_type": "browser", "client_id": "\(pending.clientID)", "grant_id": "\(grant.id)"])
        return requests.authorizationResponse(
            redirectURI: pending.redirectURI,
            [
                ("access_token", accessToken.value), ("token_type", "Bearer"), ("expires_in", String(Int(lifetime))),
                ("scope", scope.description), ("user_id", userID.rawValue),
            ],
            state: pending.state, mode: pending.effectiveResponseMode)
    }
}
