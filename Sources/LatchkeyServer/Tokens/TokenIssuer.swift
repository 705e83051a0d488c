import Foundation
import LatchkeyCore

/// A freshly minted access token (and refresh token), as records to store and as the response.
struct IssuedTokens {
    var records: [TokenRecord]
    var response: TokenResponse
    var refreshHash: TokenHash?
}

extension AuthorizationServer {
    /// Mints an access token for `accessScope` and, when `refreshScope` is given, a refresh token
    /// for it (docs/design.md §6: random, prefixed, stored by SHA-256 only), with the client's own
    /// lifetimes where it has them.
    func mintTokens(grantID: GrantID, client: Client, userID: UserID?, accessScope: ScopeSet, refreshScope: ScopeSet?)
        -> IssuedTokens
    {
        let issuedAt = now
        let clientID = client.id
        let accessLifetime = client.accessTokenLifetime.map(TimeInterval.init) ?? configuration.accessTokenLifetime
        let refreshLifetime = client.refreshTokenLifetime.map(TimeInterval.init) ?? configuration.refreshTokenLifetime
        let access = RandomToken.generate(.accessToken)
        var records: [TokenRecord] = []
        var refresh: String?
        var refreshHash: TokenHash?
        if let refreshScope {
            let value = RandomToken.generate(.refreshToken)
            let hash = TokenHash(of: value)
            refresh = value
            refreshHash = hash
            records.append(
                TokenRecord(
                    hash: hash, kind: .refresh, grantID: grantID, clientID: clientID, userID: userID, scope: refreshScope,
                    createdAt: issuedAt, expiresAt: issuedAt.addingTimeInterval(refreshLifetime)))
        }
        records.append(
            TokenRecord(
                hash: TokenHash(of: access), kind: .access, grantID: grantID, clientID: clientID, userID: userID,
                scope: accessScope, createdAt: issuedAt,
                expiresAt: issuedAt.addingTimeInterval(accessLifetime), issuedWith: refreshHash))
        let response = TokenResponse(
            accessToken: access, expiresIn: Int(accessLifetime), refreshToken: refresh,
            scope: accessScope.description, userID: userID?.rawValue)
        return IssuedTokens(records: records, response: response, refreshHash: refreshHash)
    }
}

extension AuthorizationServer {
    /// A new grant id (``TimeOrderedID``): ids that grow with time put each new grant, and its
    /// tokens' `grant_id` entries, at the end of their indexes instead of on a random page that must
    /// be read and rewritten. A grant id is not a secret: it never leaves the server.
    func newGrantID() -> GrantID { GrantID(rawValue: TimeOrderedID.make(at: now)) }
}
