import Foundation
import LatchkeyCore

/// Authorization codes, grants and tokens (and, read with a token, its user).
///
/// The operations that decide whether a credential may be used exactly once
/// (``redeemAuthorizationCode(codeHash:grant:tokens:at:)``, ``rotateRefreshToken(hash:successors:at:)``,
/// ``reissueWithinGrace(originalHash:retiredHash:successors:at:)``) are conditional updates whose
/// winner is decided by the database, so several server instances may share one store.
public protocol GrantStore: Sendable {
    /// Stores `code` whatever its user's state: for tests that set up what a race could leave
    /// behind. The server stores codes with ``insertAuthorizationCode(_:whileAccessEpoch:)`` only.
    func insertAuthorizationCode(_ code: AuthorizationCodeRecord) async throws
    /// Stores `code` only while its user is enabled and their ``User/accessEpoch`` is still
    /// `accessEpoch`, atomically with a concurrent revocation of their access
    /// (docs/threat-model.md RV23).
    /// - Returns: `false`, storing nothing, when the user's access was revoked since the epoch was read.
    func insertAuthorizationCode(_ code: AuthorizationCodeRecord, whileAccessEpoch accessEpoch: Int) async throws -> Bool
    func authorizationCode(hash: CodeHash) async throws -> AuthorizationCodeRecord?
    /// Marks the code consumed and stores the grant and its tokens, all or nothing.
    /// - Returns: `false`, changing nothing, when the code was already consumed.
    func redeemAuthorizationCode(codeHash: CodeHash, grant: GrantRecord, tokens: [TokenRecord], at: Date) async throws
        -> Bool
    func token(hash: TokenHash) async throws -> TokenRecord?
    /// ``token(hash:)`` with the user it was issued for, in one read: what `/userinfo` answers
    /// from (OpenID Connect Core §5.3). `user` is `nil` for a token without one, or whose user is gone.
    func tokenWithUser(hash: TokenHash) async throws -> (token: TokenRecord, user: User?)?
    /// Marks an unrotated, unrevoked refresh token rotated to `successors`' refresh token and
    /// stores the successors, all or nothing.
    /// - Returns: `false`, changing nothing, when the token was already rotated or revoked.
    func rotateRefreshToken(hash: TokenHash, successors: [TokenRecord], at: Date) async throws -> Bool
    /// Within the grace window: retires the unused successor `retiredHash` (and the access tokens
    /// issued with it), points the original at the new successor and stores `successors`.
    /// - Returns: `false`, changing nothing, when the successor was used or revoked meanwhile.
    func reissueWithinGrace(originalHash: TokenHash, retiredHash: TokenHash, successors: [TokenRecord], at: Date)
        async throws -> Bool
    /// Revokes the grant and every token in it.
    func revokeGrant(id: GrantID, at: Date) async throws
    /// One grant, revoked or not.
    func grant(id: GrantID) async throws -> GrantRecord?
    /// Stores a grant with its tokens (implicit and client-credentials grants), all or nothing.
    func insertGrant(_ grant: GrantRecord, tokens: [TokenRecord]) async throws
    /// Stores a user's grant with its tokens (the implicit grant) only while the user is enabled
    /// and their ``User/accessEpoch`` is still `accessEpoch`, as
    /// ``insertAuthorizationCode(_:whileAccessEpoch:)`` does for codes.
    /// - Returns: `false`, storing nothing, when the user's access was revoked since the epoch was read.
    func insertGrant(_ grant: GrantRecord, tokens: [TokenRecord], whileAccessEpoch accessEpoch: Int) async throws -> Bool
    /// Revokes one token.
    func revokeToken(hash: TokenHash, at: Date) async throws
    /// The user's grants that are not revoked and still hold an active token, newest first.
    func activeGrants(userID: UserID, at: Date) async throws -> [GrantRecord]
    /// How many grants of each client are not revoked and still hold an active token (clients
    /// with none are left out).
    func activeGrantCounts(at: Date) async throws -> [ClientID: Int]
    /// Ends everything a user granted a client, in one transaction: every grant and its tokens,
    /// outstanding codes and approved device requests (``AccessRevocation``), and the remembered consent.
    func revokeAuthorization(userID: UserID, clientID: ClientID, at: Date) async throws
}

extension GrantStore {
    /// The token a client presented, if Latchkey issued it: the row its selector names (or, for a
    /// token kept whole, its SHA-256), provided the row's verifier digest matches the presented
    /// verifier's in constant time (docs/design.md §6).
    public func token(presented value: String) async throws -> TokenRecord? {
        let presented = PresentedSecret<KeyRoles.Token>(value)
        guard let record = try await token(hash: presented.key), presented.matches(stored: record.verifierDigest) else {
            return nil
        }
        return record
    }

    /// The token a client presented with its user, as ``token(presented:)`` finds it.
    public func tokenWithUser(presented value: String) async throws -> (token: TokenRecord, user: User?)? {
        let presented = PresentedSecret<KeyRoles.Token>(value)
        guard let found = try await tokenWithUser(hash: presented.key), presented.matches(stored: found.token.verifierDigest)
        else { return nil }
        return found
    }

    /// The authorization code a client presented, if Latchkey issued it (as ``token(presented:)``).
    public func authorizationCode(presented value: String) async throws -> AuthorizationCodeRecord? {
        let presented = PresentedSecret<KeyRoles.Code>(value)
        guard let record = try await authorizationCode(hash: presented.key), presented.matches(stored: record.verifierDigest)
        else { return nil }
        return record
    }
}
