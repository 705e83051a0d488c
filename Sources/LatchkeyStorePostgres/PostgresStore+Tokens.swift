import Foundation
import LatchkeyCore
import LatchkeyServer
import PostgresNIO

// The operations PostgreSQL answers its own way rather than with the shared SQL, each because a
// measurement showed it pays: a grant's writes in one statement (one round trip instead of BEGIN,
// a statement per row and COMMIT), and the hot reads as prepared statements. Each keeps the
// shared operation's meaning, which the conformance suite checks on both stores.
extension PostgresStore {
    public func insertAuthorizationCode(_ code: AuthorizationCodeRecord, whileAccessEpoch accessEpoch: Int) async throws
        -> Bool
    {
        var statement = OneStatement()
        let live = statement.accessUnchanged(user: code.userID, since: accessEpoch)
        let values = [
            statement.text(code.codeHash.rawValue), statement.text(code.clientID.rawValue), statement.text(code.userID.rawValue),
            statement.text(code.redirectURI), statement.text(code.redirectURIParameter), statement.text(code.scope.description),
            statement.text(code.codeChallenge), statement.instant(code.createdAt), statement.instant(code.expiresAt),
            statement.instant(code.consumedAt), statement.text(code.grantID?.rawValue), statement.text(code.nonce),
            statement.instant(code.authTime), statement.text(code.resources.description), statement.text(code.verifierDigest),
            statement.text(code.dpopJKT), statement.text(code.amr?.description), statement.text(code.sid),
        ]
        return try await runOneStatement(
            PostgresQuery(
                unsafeSQL: """
                    WITH live AS (\(live)),
                    stored AS (INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri,
                        redirect_uri_parameter, scope, code_challenge, created_at, expires_at, consumed_at, grant_id, nonce,
                        auth_time, resources, verifier, dpop_jkt, amr, sid)
                        SELECT \(values.joined(separator: ", ")) FROM live RETURNING 1)
                    SELECT count(*) FROM stored
                    """, binds: statement.binds))
    }

    public func insertGrant(_ grant: GrantRecord, tokens: [TokenRecord], whileAccessEpoch accessEpoch: Int) async throws
        -> Bool
    {
        guard let user = grant.userID else { return false }
        return try await runOneStatement(
            OneStatement.storing(
                grant: grant, tokens: tokens,
                requiring: { statement in statement.accessUnchanged(user: user, since: accessEpoch) }))
    }

    public func redeemAuthorizationCode(codeHash: CodeHash, grant: GrantRecord, tokens: [TokenRecord], at: Date) async throws
        -> Bool
    {
        guard codeHash.isUsable else { return false }
        return try await runOneStatement(Self.redemption(codeHash: codeHash, grant: grant, tokens: tokens, at: at))
    }

    static func redemption(codeHash: CodeHash, grant: GrantRecord, tokens: [TokenRecord], at: Date) -> PostgresQuery {
        OneStatement.storing(
            grant: grant, tokens: tokens,
            requiring: { statement in
                // The user still enabled. A concurrent disable, password change or Disconnect
                // deletes the outstanding codes before it revokes grants, so it either takes
                // this code first or, waiting for its row, sees the grant stored with it
                // (AccessRevocation).
                "SELECT 1 FROM users WHERE id = \(statement.text(grant.userID?.rawValue)) AND disabled_at IS NULL"
            }
        ) { statement in
            """
            UPDATE authorization_codes SET consumed_at = \(statement.instant(at)), grant_id = \(statement.text(grant.id.rawValue))
            WHERE code_hash = \(statement.text(codeHash.rawValue)) AND consumed_at IS NULL AND EXISTS (SELECT 1 FROM live)
            """
        }
    }

    public func token(hash: TokenHash) async throws -> TokenRecord? {
        guard hash.isUsable else { return nil }
        return try await perform { client in
            var found: TokenRecord?
            for try await token in try await client.execute(TokenByHash(hash: hash)) { found = token }
            return found
        }
    }

    public func tokenWithUser(hash: TokenHash) async throws -> (token: TokenRecord, user: User?)? {
        guard hash.isUsable else { return nil }
        return try await perform { client in
            var found: (token: TokenRecord, user: User?)?
            for try await row in try await client.execute(TokenWithUserByHash(hash: hash)) { found = row }
            return found
        }
    }

    public func clientAndFailures(id: ClientID, knownKey: ThrottleKey, unknownKey: ThrottleKey, at: Date) async throws
        -> (Client?, ThrottleWindow?)
    {
        // An id that cannot name a row names no client: its failures are the unknown client's.
        guard id.isUsable else { return (nil, try await failures(key: unknownKey, at: at)) }
        return try await perform { client in
            var found: (Client?, ThrottleWindow?) = (nil, nil)
            for try await row in try await client.execute(
                ClientAndFailures(id: id, knownKey: knownKey, unknownKey: unknownKey, at: at))
            {
                found = row
            }
            return found
        }
    }

    /// A `SELECT` that finds the grant of the token whose hash is the SQL `tokenHash` while the grant
    /// is not revoked and its user (if any) enabled. It keeps a rotation from writing tokens into a grant already revoked; one
    /// that commits while a revocation runs may still write them, and they are dead all the same,
    /// since a token's life is read from its grant and user (``TokenRecord/grantEnded``, threat
    /// model RV1, RV2). No row is locked: a `FOR SHARE` here cost a third of the refresh rate.
    static func liveGrant(ofToken tokenHash: String) -> String {
        """
        SELECT 1 FROM grants g WHERE g.id = (SELECT grant_id FROM tokens WHERE hash = \(tokenHash)) AND g.revoked_at IS NULL
            AND (g.user_id IS NULL OR EXISTS (SELECT 1 FROM users u WHERE u.id = g.user_id AND u.disabled_at IS NULL))
        """
    }

    public func rotateRefreshToken(hash: TokenHash, successors: [TokenRecord], at: Date) async throws -> Bool {
        guard hash.isUsable else { return false }
        return try await runOneStatement(Self.rotation(hash: hash, successors: successors, at: at))
    }

    static func rotation(hash: TokenHash, successors: [TokenRecord], at: Date) -> PostgresQuery {
        let successorHash = successors.first { $0.kind == .refresh }?.hash
        return OneStatement.storing(
            grant: nil, tokens: successors,
            requiring: { statement in Self.liveGrant(ofToken: statement.text(hash.rawValue)) }
        ) { statement in
            """
            UPDATE tokens SET rotated_at = \(statement.instant(at)), successor_hash = \(statement.text(successorHash?.rawValue))
            WHERE hash = \(statement.text(hash.rawValue)) AND kind = 'refresh' AND rotated_at IS NULL AND revoked_at IS NULL
                AND EXISTS (SELECT 1 FROM live)
            """
        }
    }

    public func insertGrant(_ grant: GrantRecord, tokens: [TokenRecord]) async throws {
        _ = try await runOneStatement(OneStatement.storing(grant: grant, tokens: tokens))
    }
}
