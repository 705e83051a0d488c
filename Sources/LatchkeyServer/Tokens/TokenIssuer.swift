import Foundation
import LatchkeyCore

/// A freshly minted access token (and refresh token), as records to store and as the response.
struct IssuedTokens {
    var records: [TokenRecord]
    var response: TokenResponse
    var refreshHash: String?
}

extension AuthorizationServer {
    /// Mints an access token for `accessScope` and, when `refreshScope` is given, a refresh token
    /// for it (DESIGN §6: random, prefixed, stored by SHA-256 only).
    func mintTokens(grantID: String, clientID: String, userID: String?, accessScope: ScopeSet, refreshScope: ScopeSet?)
        -> IssuedTokens
    {
        let issuedAt = now
        let access = RandomToken.generate(.accessToken)
        var records: [TokenRecord] = []
        var refresh: String?
        var refreshHash: String?
        if let refreshScope {
            let value = RandomToken.generate(.refreshToken)
            let hash = RandomToken.hash(value)
            refresh = value
            refreshHash = hash
            records.append(
                TokenRecord(
                    hash: hash, kind: .refresh, grantID: grantID, clientID: clientID, userID: userID, scope: refreshScope,
                    createdAt: issuedAt, expiresAt: issuedAt.addingTimeInterval(configuration.refreshTokenLifetime)))
        }
        records.append(
            TokenRecord(
                hash: RandomToken.hash(access), kind: .access, grantID: grantID, clientID: clientID, userID: userID,
                scope: accessScope, createdAt: issuedAt,
                expiresAt: issuedAt.addingTimeInterval(configuration.accessTokenLifetime), issuedWith: refreshHash))
        let response = TokenResponse(
            accessToken: access, expiresIn: Int(configuration.accessTokenLifetime), refreshToken: refresh,
            scope: accessScope.description, userID: userID)
        return IssuedTokens(records: records, response: response, refreshHash: refreshHash)
    }
}
