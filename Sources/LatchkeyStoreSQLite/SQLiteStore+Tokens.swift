import Foundation
import GRDB
import LatchkeyCore
import LatchkeyServer

// Codes, grants and tokens: the operations that must happen exactly once are conditional updates
// whose affected-row count decides the winner, inside the transaction that stores the results.
extension SQLiteStore {
    public func insertAuthorizationCode(_ code: AuthorizationCodeRecord) async throws {
        try await write { db in try Self.insert(code, db) }
    }

    // One writer at a time: the check and the insert see no revocation between them.
    public func insertAuthorizationCode(_ code: AuthorizationCodeRecord, whileAccessEpoch accessEpoch: Int) async throws
        -> Bool
    {
        try await write { db in
            guard try Self.accessUnchanged(user: code.userID, since: accessEpoch, db) else { return false }
            try Self.insert(code, db)
            return true
        }
    }

    public func insertGrant(_ grant: GrantRecord, tokens: [TokenRecord], whileAccessEpoch accessEpoch: Int) async throws
        -> Bool
    {
        try await write { db in
            guard let user = grant.userID, try Self.accessUnchanged(user: user, since: accessEpoch, db) else { return false }
            try Self.insert(grant, db)
            for token in tokens { try Self.insert(token, db) }
            return true
        }
    }

    /// Whether the user is enabled and their access epoch is still `accessEpoch` (RV23).
    static func accessUnchanged(user: UserID, since accessEpoch: Int, _ db: Database) throws -> Bool {
        try db.row(
            sql: "SELECT 1 FROM users WHERE id = ? AND access_epoch = ? AND disabled_at IS NULL", arguments: [user, accessEpoch]
        ) != nil
    }

    static func insert(_ code: AuthorizationCodeRecord, _ db: Database) throws {
        try db.run(
            sql: """
                INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, redirect_uri_parameter,
                    scope, code_challenge, created_at, expires_at, consumed_at, grant_id, nonce, auth_time, resources,
                    verifier)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                code.codeHash, code.clientID, code.userID, code.redirectURI, code.redirectURIParameter,
                code.scope.description, code.codeChallenge, code.createdAt.storeValue, code.expiresAt.storeValue,
                code.consumedAt?.storeValue, code.grantID, code.nonce, code.authTime?.storeValue,
                code.resources.description, code.verifierDigest,
            ])
    }

    public func authorizationCode(hash: CodeHash) async throws -> AuthorizationCodeRecord? {
        return try await read { db in
            try db.row(sql: "SELECT * FROM authorization_codes WHERE code_hash = ?", arguments: [hash]).map { row in
                AuthorizationCodeRecord(
                    codeHash: row["code_hash"], clientID: row["client_id"], userID: row["user_id"],
                    redirectURI: row["redirect_uri"], redirectURIParameter: row["redirect_uri_parameter"],
                    scope: row.scope("scope"), codeChallenge: row["code_challenge"], createdAt: row.date("created_at"),
                    expiresAt: row.date("expires_at"), consumedAt: row.optionalDate("consumed_at"), grantID: row["grant_id"],
                    nonce: row["nonce"], authTime: row.optionalDate("auth_time"),
                    resources: ResourceSet(storeValue: row["resources"]), verifierDigest: row["verifier"])
            }
        }
    }

    public func redeemAuthorizationCode(codeHash: CodeHash, grant: GrantRecord, tokens: [TokenRecord], at: Date) async throws
        -> Bool
    {
        return try await write { db in
            // The user must still be enabled: disabling deletes outstanding codes, and this keeps a
            // code read before that from becoming a grant after it.
            try db.run(
                sql: """
                    UPDATE authorization_codes SET consumed_at = ?, grant_id = ? WHERE code_hash = ? AND consumed_at IS NULL
                        AND EXISTS (SELECT 1 FROM users u WHERE u.id = authorization_codes.user_id AND u.disabled_at IS NULL)
                    """,
                arguments: [at.storeValue, grant.id, codeHash])
            guard db.changesCount == 1 else { return false }
            try Self.insert(grant, db)
            for token in tokens { try Self.insert(token, db) }
            return true
        }
    }

    public func token(hash: TokenHash) async throws -> TokenRecord? {
        return try await read { db in
            // Read by position (see SQLiteStore.userColumns): this is the bearer-validation hot path.
            try db.row(
                sql: Self.tokenQuery, arguments: [hash]
            ).map { row in
                var token = TokenRecord(
                    hash: row[0], kind: TokenKind(rawValue: row[1]) ?? .access, grantID: row[2], clientID: row[3], userID: row[4],
                    scope: ScopeSet(words: row[5]), createdAt: Date(storeValue: row[6]), expiresAt: Date(storeValue: row[7]),
                    revokedAt: (row[8] as Double?).map(Date.init(storeValue:)),
                    rotatedAt: (row[9] as Double?).map(Date.init(storeValue:)),
                    successorHash: row[10], issuedWith: row[11], audience: ResourceSet(storeValue: row[12]),
                    keyThumbprint: row[13], verifierDigest: row[14])
                token.grantEnded = row[15]
                return token
            }
        }
    }

    public func rotateRefreshToken(hash: TokenHash, successors: [TokenRecord], at: Date) async throws -> Bool {
        let successorHash = successors.first { $0.kind == .refresh }?.hash
        return try await write { db in
            try db.run(
                sql: """
                    UPDATE tokens SET rotated_at = ?, successor_hash = ?
                    WHERE hash = ? AND kind = 'refresh' AND rotated_at IS NULL AND revoked_at IS NULL
                        AND NOT \(Self.grantEnded("tokens"))
                    """,
                arguments: [at.storeValue, successorHash, hash])
            guard db.changesCount == 1 else { return false }
            for token in successors { try Self.insert(token, db) }
            return true
        }
    }

    public func reissueWithinGrace(originalHash: TokenHash, retiredHash: TokenHash, successors: [TokenRecord], at: Date)
        async throws -> Bool
    {
        let successorHash = successors.first { $0.kind == .refresh }?.hash
        return try await write { db in
            // Retire the unused successor: rotated with no successor, so presenting it later is reuse.
            try db.run(
                sql: """
                    UPDATE tokens SET rotated_at = ?, successor_hash = NULL
                    WHERE hash = ? AND rotated_at IS NULL AND revoked_at IS NULL
                        AND NOT \(Self.grantEnded("tokens"))
                    """,
                arguments: [at.storeValue, retiredHash])
            guard db.changesCount == 1 else { return false }
            // Found through the grant's index: there is none on issued_with.
            try db.run(
                sql: """
                    UPDATE tokens SET revoked_at = ?
                    WHERE grant_id = (SELECT grant_id FROM tokens WHERE hash = ?) AND issued_with = ? AND revoked_at IS NULL
                    """,
                arguments: [at.storeValue, retiredHash, retiredHash])
            try db.run(
                sql: "UPDATE tokens SET successor_hash = ? WHERE hash = ?", arguments: [successorHash, originalHash])
            for token in successors { try Self.insert(token, db) }
            return true
        }
    }

    public func revokeGrant(id: GrantID, at: Date) async throws {
        try await write { db in
            try db.run(
                sql: "UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", arguments: [at.storeValue, id])
            try db.run(
                sql: "UPDATE tokens SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL", arguments: [at.storeValue, id])
        }
    }

    public func insertGrant(_ grant: GrantRecord, tokens: [TokenRecord]) async throws {
        try await write { db in
            try Self.insert(grant, db)
            for token in tokens { try Self.insert(token, db) }
        }
    }

    public func revokeToken(hash: TokenHash, at: Date) async throws {
        try await write { db in
            try db.run(
                sql: "UPDATE tokens SET revoked_at = ? WHERE hash = ? AND revoked_at IS NULL", arguments: [at.storeValue, hash])
        }
    }

    public func activeGrantCounts(at: Date) async throws -> [ClientID: Int] {
        return try await read { db in
            let rows = try db.rows(
                sql: """
                    SELECT g.client_id, COUNT(*) FROM grants g WHERE g.revoked_at IS NULL
                    AND EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = g.id AND t.revoked_at IS NULL AND t.expires_at > ?)
                    GROUP BY g.client_id
                    """, arguments: [at.storeValue])
            return Dictionary(uniqueKeysWithValues: rows.map { ($0[0] as ClientID, $0[1] as Int) })
        }
    }

    public func activeGrants(userID: UserID, at: Date) async throws -> [GrantRecord] {
        return try await read { db in
            try db.rows(
                sql: """
                    SELECT * FROM grants g WHERE g.user_id = ? AND g.revoked_at IS NULL
                    AND EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = g.id AND t.revoked_at IS NULL AND t.expires_at > ?)
                    ORDER BY g.created_at DESC
                    """, arguments: [userID, at.storeValue]
            ).map(Self.grant)
        }
    }

    public func grant(id: GrantID) async throws -> GrantRecord? {
        try await read { db in try db.row(sql: "SELECT * FROM grants WHERE id = ?", arguments: [id]).map(Self.grant) }
    }

    private static func grant(_ row: Row) -> GrantRecord {
        GrantRecord(
            id: row["id"], clientID: row["client_id"], userID: row["user_id"], scope: row.scope("scope"),
            createdAt: row.date("created_at"), revokedAt: row.optionalDate("revoked_at"), authTime: row.optionalDate("auth_time"),
            resources: ResourceSet(storeValue: row["resources"]))
    }

    public func revokeAuthorization(userID: UserID, clientID: ClientID, at: Date) async throws {
        try await write { db in
            try Self.revokeAccess(userID: userID.rawValue, clientID: clientID, at: at, db)
            try db.run(sql: "DELETE FROM consents WHERE user_id = ? AND client_id = ?", arguments: [userID, clientID])
        }
    }

    public func appliedSchemaSteps() async throws -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM grdb_migrations") ?? 0 }
    }

    public func purgeExpired(
        at: Date, retention: TimeInterval, activityRetention: TimeInterval, unusedRegistrationRetention: TimeInterval
    ) async throws -> Int {
        try await ExpiryPurge.run(
            at: at, retention: retention, activityRetention: activityRetention,
            unusedRegistrationRetention: unusedRegistrationRetention
        ) { sql, cutoff in
            try await write { db in
                try db.run(sql: sql, arguments: [cutoff])
                return db.changesCount
            }
        }
    }

    private static func insert(_ grant: GrantRecord, _ db: Database) throws {
        try db.run(
            sql: """
                INSERT INTO grants (id, client_id, user_id, scope, created_at, revoked_at, auth_time, resources)
                VALUES (?, ?, ?, ?, ?, NULL, ?, ?)
                """,
            arguments: [
                grant.id, grant.clientID, grant.userID, grant.scope.description, grant.createdAt.storeValue,
                grant.authTime?.storeValue, grant.resources.description,
            ])
    }

    private static func insert(_ token: TokenRecord, _ db: Database) throws {
        try db.run(
            sql: """
                INSERT INTO tokens (hash, kind, grant_id, client_id, user_id, scope, created_at, expires_at, revoked_at,
                    rotated_at, successor_hash, issued_with, audience, jkt, verifier)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                token.hash, token.kind.rawValue, token.grantID, token.clientID, token.userID, token.scope.description,
                token.createdAt.storeValue, token.expiresAt.storeValue, token.revokedAt?.storeValue,
                token.rotatedAt?.storeValue, token.successorHash, token.issuedWith, token.audience.description,
                token.keyThumbprint, token.verifierDigest,
            ])
    }

    static let tokenQuery = """
        SELECT t.hash, t.kind, t.grant_id, t.client_id, t.user_id, t.scope, t.created_at, t.expires_at, t.revoked_at,
            t.rotated_at, t.successor_hash, t.issued_with, t.audience, t.jkt, t.verifier, \(grantEnded("t"))
        FROM tokens t WHERE t.hash = ?
        """

    /// SQL that is true when the token row `alias` belongs to a revoked grant or to a user who is
    /// disabled or gone (``TokenRecord/grantEnded``).
    static func grantEnded(_ alias: String) -> String {
        """
        (EXISTS (SELECT 1 FROM grants g WHERE g.id = \(alias).grant_id AND g.revoked_at IS NOT NULL)
            OR (\(alias).user_id IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = \(alias).user_id AND u.disabled_at IS NULL)))
        """
    }
}
