import Foundation
import LatchkeyCore

/// A freshly minted access token (and refresh token), as records to store and as the response.
struct IssuedTokens {
    var records: [TokenRecord]
    var response: TokenResponse
    var refreshHash: TokenHash?
}

/// What an access token is for: its audience (RFC 8707), and the resources the grant holds, which
/// its refresh token carries on.
struct TokenTarget {
    /// The registered resources the access token is for; empty when the request named none.
    var audience: [ProtectedResource] = []
    /// The grant's resources (the refresh token's audience).
    var granted: ResourceSet = .none
    /// When the user signed in, for a JWT access token's `auth_time`.
    var authTime: Date?
    /// How the user signed in, for a JWT access token's `acr` and `amr` (RFC 9068 §2.2.1), which
    /// a resource server checks before a sensitive action (RFC 9470).
    var amr: AuthenticationMethods?
    /// The DPoP key (its thumbprint) the request proved it holds (RFC 9449): the access token is
    /// bound to it, and so is a public client's refresh token (§5).
    var keyThumbprint: String?
    /// The `act` claim (RFC 8693 §4.1), as JSON, of a token made by an exchange with an actor.
    var actor: String?
    /// The latest the access token may expire: an exchanged token never outlives the token it
    /// was exchanged for.
    var expiresBy: Date?

    static let none = TokenTarget()
}

/// Mints access, refresh and ID tokens and applies the rules on resources and scopes that every
/// issuing path shares. It reads the resource and scope catalogues and the signing keys, and
/// writes nothing: each caller stores what it minted.
public struct TokenIssuance: Sendable, ServerContextual {
    let signingKeys: SigningKeyring
    let catalogue: any ResourceStore & ScopeCatalogueStore
    let context: ServerContext

    /// Mints an access token for `accessScope` and, when `refreshScope` is given, a refresh token
    /// for it (docs/design.md §6: split tokens, stored by selector and the SHA-256 of the verifier),
    /// with the client's own lifetimes where it has them.
    ///
    /// The access token is a JWT (RFC 9068) when a resource of its audience asks for one, stored
    /// by its SHA-256, and a split token otherwise; introspection and revocation treat both alike.
    /// A resource's own lifetime shortens the access token's.
    func mintTokens(
        grantID: GrantID, client: Client, userID: UserID?, accessScope: ScopeSet, refreshScope: ScopeSet?,
        target: TokenTarget = .none
    ) async throws -> IssuedTokens {
        let issuedAt = now
        let clientID = client.id
        var accessLifetime = client.accessTokenLifetime.map(TimeInterval.init) ?? configuration.accessTokenLifetime
        let asJWT = target.audience.contains { $0.tokenFormat == .jwt }
        for resource in target.audience {
            let own = resource.accessTokenLifetime ?? (resource.tokenFormat == .jwt ? ProtectedResource.defaultJWTLifetime : nil)
            if let own { accessLifetime = min(accessLifetime, TimeInterval(own)) }
        }
        if asJWT { accessLifetime = min(accessLifetime, TimeInterval(ProtectedResource.maximumJWTLifetime)) }
        if let expiresBy = target.expiresBy {
            accessLifetime = min(accessLifetime, expiresBy.timeIntervalSince(issuedAt).rounded(.down))
        }
        let refreshLifetime = client.refreshTokenLifetime.map(TimeInterval.init) ?? configuration.refreshTokenLifetime
        let access: String
        let accessHash: TokenHash
        var accessVerifier: String?
        if asJWT {
            access = try await jwtAccessToken(
                client: client, userID: userID, scope: accessScope, audience: target.audience, authTime: target.authTime,
                amr: userID == nil ? nil : (target.amr ?? .password), issuedAt: issuedAt, lifetime: accessLifetime,
                keyThumbprint: target.keyThumbprint, actor: target.actor)
            accessHash = TokenHash(of: access)
        } else {
            let split = SplitToken.generate(.accessToken, issuedAt: issuedAt)
            (access, accessHash, accessVerifier) = (split.value, TokenHash(issued: split), split.verifierDigest)
        }
        var records: [TokenRecord] = []
        var refresh: String?
        var refreshHash: TokenHash?
        if let refreshScope {
            let split = SplitToken.generate(.refreshToken, issuedAt: issuedAt)
            let hash = TokenHash(issued: split)
            refresh = split.value
            refreshHash = hash
            records.append(
                TokenRecord(
                    hash: hash, kind: .refresh, grantID: grantID, clientID: clientID, userID: userID, scope: refreshScope,
                    createdAt: issuedAt, expiresAt: issuedAt.addingTimeInterval(refreshLifetime), audience: target.granted,
                    // A confidential client's refresh token is bound by its own credentials (§5).
                    keyThumbprint: client.type.isConfidential ? nil : target.keyThumbprint,
                    verifierDigest: split.verifierDigest))
        }
        records.append(
            TokenRecord(
                hash: accessHash, kind: .access, grantID: grantID, clientID: clientID, userID: userID,
                scope: accessScope, createdAt: issuedAt,
                expiresAt: issuedAt.addingTimeInterval(accessLifetime), issuedWith: refreshHash,
                audience: ResourceSet(target.audience.map(\.uri)), keyThumbprint: target.keyThumbprint,
                verifierDigest: accessVerifier))
        let response = TokenResponse(
            accessToken: access, tokenType: target.keyThumbprint == nil ? "Bearer" : "DPoP", expiresIn: Int(accessLifetime),
            refreshToken: refresh, scope: accessScope.description, userID: userID?.rawValue)
        return IssuedTokens(records: records, response: response, refreshHash: refreshHash)
    }
}

extension TokenIssuance {
    /// A new grant id (``TimeOrderedID``): ids that grow with time put each new grant, and its
    /// tokens' `grant_id` entries, at the end of their indexes instead of on a random page that must
    /// be read and rewritten. A grant id is not a secret: it never leaves the server.
    func newGrantID() -> GrantID { GrantID(rawValue: TimeOrderedID.make(at: now)) }
}
