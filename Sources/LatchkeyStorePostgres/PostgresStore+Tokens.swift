import Foundation
import LatchkeyCore
import LatchkeyServer
import PostgresNIO

// Codes, grants and tokens. The once-only operations are conditional updates in the transaction
// that stores their results: PostgreSQL makes a concurrent second updater wait for the first and
// then find its condition false, so exactly one wins.
extension PostgresStore {
    public func insertAuthorizationCode(_ code: AuthorizationCodeRecord) async throws {
        _ = try await perform { client in
            try await client.query(
                """
                INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, redirect_uri_parameter, scope,
                    code_challenge, created_at, expires_at, consumed_at, grant_id, nonce, auth_time, resources, verifier)
                VALUES (\(code.codeHash), \(code.clientID), \(code.userID), \(code.redirectURI), \(code.redirectURIParameter),
                    \(code.scope.description), \(code.codeChallenge), \(code.createdAt.timeIntervalSince1970),
                    \(code.expiresAt.timeIntervalSince1970), \(code.consumedAt?.timeIntervalSince1970), \(code.grantID),
                    \(code.nonce), \(code.authTime?.timeIntervalSince1970), \(code.resources.description),
                    \(code.verifierDigest))
                """)
        }
    }

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
        ]
        return try await runOneStatement(
            PostgresQuery(
                unsafeSQL: """
                    WITH live AS (\(live)),
                    stored AS (INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri,
                        redirect_uri_parameter, scope, code_challenge, created_at, expires_at, consumed_at, grant_id, nonce,
                        auth_time, resources, verifier)
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

    public func authorizationCode(hash: CodeHash) async throws -> AuthorizationCodeRecord? {
        return try await perform { client in
            try await client.query("SELECT * FROM authorization_codes WHERE code_hash = \(hash)").map { row in
                AuthorizationCodeRecord(
                    codeHash: try CodeHash(rawValue: row.string("code_hash")),
                    clientID: try ClientID(rawValue: row.string("client_id")),
                    userID: try UserID(rawValue: row.string("user_id")),
                    redirectURI: try row.string("redirect_uri"),
                    redirectURIParameter: try row.optionalString("redirect_uri_parameter"),
                    scope: try row.scope("scope"), codeChallenge: try row.optionalString("code_challenge"),
                    createdAt: try row.date("created_at"), expiresAt: try row.date("expires_at"),
                    consumedAt: try row.optionalDate("consumed_at"),
                    grantID: try row.optionalString("grant_id").map(GrantID.init(rawValue:)),
                    nonce: try row.optionalString("nonce"), authTime: try row.optionalDate("auth_time"),
                    resources: ResourceSet(storeValue: try row.string("resources")),
                    verifierDigest: try row.optionalString("verifier"))
            }.first
        }
    }

    public func redeemAuthorizationCode(codeHash: CodeHash, grant: GrantRecord, tokens: [TokenRecord], at: Date) async throws
        -> Bool
    {
        try await runOneStatement(Self.redemption(codeHash: codeHash, grant: grant, tokens: tokens, at: at))
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
        return try await perform { client in
            var found: TokenRecord?
            for try await token in try await client.execute(TokenByHash(hash: hash)) { found = token }
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
        try await runOneStatement(Self.rotation(hash: hash, successors: successors, at: at))
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

    public func reissueWithinGrace(originalHash: TokenHash, retiredHash: TokenHash, successors: [TokenRecord], at: Date)
        async throws -> Bool
    {
        let successorHash = successors.first { $0.kind == .refresh }?.hash
        let now = at.timeIntervalSince1970
        var binds = PostgresBindings()
        binds.append(retiredHash.rawValue)
        let live = PostgresQuery(unsafeSQL: Self.liveGrant(ofToken: "$1"), binds: binds)
        return try await transaction { connection, logger in
            guard try await connection.query(live, logger: logger).count() == 1 else { return false }
            let won =
                try await connection.query(
                    """
                    UPDATE tokens SET rotated_at = \(now), successor_hash = NULL
                    WHERE hash = \(retiredHash) AND rotated_at IS NULL AND revoked_at IS NULL RETURNING hash
                    """, logger: logger
                ).count() == 1
            guard won else { return false }
            // Found through the grant's index: there is none on issued_with.
            try await connection.query(
                """
                UPDATE tokens SET revoked_at = \(now)
                WHERE grant_id = (SELECT grant_id FROM tokens WHERE hash = \(retiredHash)) AND issued_with = \(retiredHash)
                    AND revoked_at IS NULL
                """, logger: logger)
            try await connection.query(
                "UPDATE tokens SET successor_hash = \(successorHash) WHERE hash = \(originalHash)", logger: logger)
            for token in successors { try await connection.query(Self.insertQuery(token), logger: logger) }
            return true
        }
    }

    public func revokeGrant(id: GrantID, at: Date) async throws {
        let now = at.timeIntervalSince1970
        _ = try await transaction { connection, logger in
            try await connection.query(
                "UPDATE grants SET revoked_at = \(now) WHERE id = \(id) AND revoked_at IS NULL", logger: logger)
            try await connection.query(
                "UPDATE tokens SET revoked_at = \(now) WHERE grant_id = \(id) AND revoked_at IS NULL", logger: logger)
            return true
        }
    }

    public func insertGrant(_ grant: GrantRecord, tokens: [TokenRecord]) async throws {
        _ = try await runOneStatement(OneStatement.storing(grant: grant, tokens: tokens))
    }

    public func revokeToken(hash: TokenHash, at: Date) async throws {
        _ = try await perform { client in
            try await client.query(
                "UPDATE tokens SET revoked_at = \(at.timeIntervalSince1970) WHERE hash = \(hash) AND revoked_at IS NULL")
        }
    }

    public func activeGrantCounts(at: Date) async throws -> [ClientID: Int] {
        let now = at.timeIntervalSince1970
        return try await perform { client in
            let rows = try await client.query(
                """
                SELECT g.client_id, COUNT(*) AS active FROM grants g WHERE g.revoked_at IS NULL
                AND EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = g.id AND t.revoked_at IS NULL AND t.expires_at > \(now))
                GROUP BY g.client_id
                """
            ).map { row in (try ClientID(rawValue: row.string("client_id")), try row["active"].decode(Int.self)) }
            return Dictionary(uniqueKeysWithValues: rows)
        }
    }

    public func activeGrants(userID: UserID, at: Date) async throws -> [GrantRecord] {
        return try await perform { client in
            try await client.query(
                """
                SELECT * FROM grants g WHERE g.user_id = \(userID) AND g.revoked_at IS NULL
                AND EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = g.id AND t.revoked_at IS NULL
                    AND t.expires_at > \(at.timeIntervalSince1970))
                ORDER BY g.created_at DESC
                """
            ).map(Self.grant)
        }
    }

    public func grant(id: GrantID) async throws -> GrantRecord? {
        try await perform { client in try await client.query("SELECT * FROM grants WHERE id = \(id)").map(Self.grant).first }
    }

    static func grant(_ row: PostgresRandomAccessRow) throws -> GrantRecord {
        GrantRecord(
            id: try GrantID(rawValue: row.string("id")), clientID: try ClientID(rawValue: row.string("client_id")),
            userID: try row.optionalString("user_id").map(UserID.init(rawValue:)),
            scope: try row.scope("scope"), createdAt: try row.date("created_at"),
            revokedAt: try row.optionalDate("revoked_at"), authTime: try row.optionalDate("auth_time"),
            resources: ResourceSet(storeValue: try row.string("resources")))
    }

    public func revokeAuthorization(userID: UserID, clientID: ClientID, at: Date) async throws {
        _ = try await transaction { connection, logger in
            try await Self.revokeAccess(userID: userID.rawValue, clientID: clientID, at: at, on: connection, logger: logger)
            try await connection.query(
                "DELETE FROM consents WHERE user_id = \(userID) AND client_id = \(clientID)", logger: logger)
            return true
        }
    }

    public func appliedSchemaSteps() async throws -> Int {
        try await perform { client in
            try await client.query("SELECT count(*)::bigint AS steps FROM latchkey_migrations").map {
                try $0["steps"].decode(Int.self)
            }.first ?? 0
        }
    }

    public func purgeExpired(
        at: Date, retention: TimeInterval, activityRetention: TimeInterval, unusedRegistrationRetention: TimeInterval
    ) async throws -> Int {
        try await ExpiryPurge.run(
            at: at, retention: retention, activityRetention: activityRetention,
            unusedRegistrationRetention: unusedRegistrationRetention
        ) { sql, cutoff in
            var binds = PostgresBindings()
            binds.append(cutoff)
            let query = PostgresQuery(unsafeSQL: sql.replacingOccurrences(of: "?", with: "$1") + " RETURNING 1", binds: binds)
            return try await perform { client in try await client.query(query).count() }
        }
    }

    static func insertQuery(_ token: TokenRecord) -> PostgresQuery {
        """
        INSERT INTO tokens (hash, kind, grant_id, client_id, user_id, scope, created_at, expires_at, revoked_at, rotated_at,
            successor_hash, issued_with, audience, jkt, verifier)
        VALUES (\(token.hash), \(token.kind.rawValue), \(token.grantID), \(token.clientID), \(token.userID), \(token.scope.description),
            \(token.createdAt.timeIntervalSince1970), \(token.expiresAt.timeIntervalSince1970), \(token.revokedAt?.timeIntervalSince1970),
            \(token.rotatedAt?.timeIntervalSince1970), \(token.successorHash), \(token.issuedWith), \(token.audience.description),
            \(token.keyThumbprint), \(token.verifierDigest))
        """
    }
}
