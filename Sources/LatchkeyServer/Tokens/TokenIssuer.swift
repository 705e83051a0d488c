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

extension AuthorizationServer {
    /// A new grant id: a UUIDv7 (RFC 9562 §5.7), the creation time in milliseconds followed by
    /// random bits. Ids that grow with time put each new grant, and its tokens' `grant_id` entries,
    /// at the end of their indexes instead of on a random page that must be read and rewritten.
    /// A grant id is not a secret: it never leaves the server.
    func newGrantID() -> String {
        var bytes = UUID().uuid  // version 4: random, variant bits already 10
        let milliseconds = UInt64(max(0, now.timeIntervalSince1970 * 1000))
        bytes.0 = UInt8(truncatingIfNeeded: milliseconds >> 40)
        bytes.1 = UInt8(truncatingIfNeeded: milliseconds >> 32)
        bytes.2 = UInt8(truncatingIfNeeded: milliseconds >> 24)
        bytes.3 = UInt8(truncatingIfNeeded: milliseconds >> 16)
        bytes.4 = UInt8(truncatingIfNeeded: milliseconds >> 8)
        bytes.5 = UInt8(truncatingIfNeeded: milliseconds)
        bytes.6 = 0x70 | (bytes.6 & 0x0F)
        return UUID(uuid: bytes).uuidString.lowercased()
    }
}
