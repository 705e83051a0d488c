import Foundation
import LatchkeyServer
import Logging
import PostgresNIO

/// The writes of a grant as one SQL statement: one round trip instead of `BEGIN`, an `INSERT` per
/// row and `COMMIT`, and atomic on its own, since PostgreSQL runs a statement as a transaction.
///
/// Each insert is a data-modifying `WITH` query (PostgreSQL runs every one of them, referenced or
/// not). With a condition, an `UPDATE … RETURNING 1` named `won`, every insert selects `FROM won`:
/// it writes its row only if the update changed one, and the statement answers how many it did.
/// A concurrent second updater waits for the first to commit and then finds its condition false,
/// exactly as it did inside an explicit transaction.
struct OneStatement {
    private(set) var binds = PostgresBindings()
    private var count = 0

    /// `$n::text`, bound to `value` (`NULL` for `nil`). The casts give every parameter its column's
    /// type where the statement's shape (`SELECT $n FROM won`) would not.
    mutating func text(_ value: String?) -> String {
        binds.append(value)
        count += 1
        return "$\(count)::text"
    }

    /// `$n::bigint`, bound to `value`.
    mutating func integer(_ value: Int) -> String {
        binds.append(value)
        count += 1
        return "$\(count)::bigint"
    }

    /// `$n::double precision`, bound to `value` in seconds since 1970 (`NULL` for `nil`).
    mutating func instant(_ value: Date?) -> String {
        binds.append(value?.timeIntervalSince1970)
        count += 1
        return "$\(count)::double precision"
    }

    /// Stores `grant` (if given) and `tokens`; with `condition` (the `UPDATE` without `RETURNING`,
    /// written through this builder so its parameters are numbered with the rest) only when it
    /// changed a row. The query answers one row: the number of rows the condition changed (1
    /// without a condition).
    ///
    /// `requiring`, a `SELECT` written through this builder, becomes the query `live` ahead of the
    /// condition, which then names it (`AND EXISTS (SELECT 1 FROM live)`): what must still hold
    /// for the update to be made, such as the grant being unrevoked (docs/threat-model.md RV1).
    /// Without a condition, the rows are stored only if `live` finds one, and the query answers
    /// how many it found.
    static func storing(
        grant: GrantRecord?, tokens: [TokenRecord], requiring: ((inout OneStatement) -> String)? = nil,
        when condition: ((inout OneStatement) -> String)? = nil
    ) -> PostgresQuery {
        var statement = OneStatement()
        var parts: [String] = []
        if let requiring { parts.append("live AS (\(requiring(&statement)))") }
        if let condition { parts.append("won AS (\(condition(&statement)) RETURNING 1)") }
        let from = condition != nil ? " FROM won" : requiring != nil ? " FROM live" : ""
        if let grant {
            let values = [
                statement.text(grant.id.rawValue), statement.text(grant.clientID.rawValue),
                statement.text(grant.userID?.rawValue),
                statement.text(grant.scope.description), statement.instant(grant.createdAt), "NULL",
                statement.instant(grant.authTime), statement.text(grant.resources.description),
                statement.text(grant.amr?.description), statement.text(grant.actor), statement.text(grant.sid),
                statement.instant(grant.expiry(tokens: tokens)),
            ]
            parts.append(
                """
                new_grant AS (
                    INSERT INTO grants (id, client_id, user_id, scope, created_at, revoked_at, auth_time, resources, amr, actor,
                        sid, expires_at)
                    SELECT \(values.joined(separator: ", "))\(from))
                """)
        }
        for (index, token) in tokens.enumerated() {
            let values = [
                statement.text(token.hash.rawValue), statement.text(token.kind.rawValue), statement.text(token.grantID.rawValue),
                statement.text(token.clientID.rawValue), statement.text(token.userID?.rawValue),
                statement.text(token.scope.description), statement.instant(token.createdAt), statement.instant(token.expiresAt),
                statement.instant(token.revokedAt), statement.instant(token.rotatedAt),
                statement.text(token.successorHash?.rawValue), statement.text(token.issuedWith?.rawValue),
                statement.text(token.audience.description), statement.text(token.keyThumbprint),
                statement.text(token.verifierDigest),
            ]
            parts.append(
                """
                new_token\(index) AS (INSERT INTO tokens (hash, kind, grant_id, client_id, user_id, scope, created_at,
                    expires_at, revoked_at, rotated_at, successor_hash, issued_with, audience, jkt, verifier)
                    SELECT \(values.joined(separator: ", "))\(from))
                """)
        }
        let answer =
            condition != nil ? "SELECT count(*) FROM won" : requiring != nil ? "SELECT count(*) FROM live" : "SELECT 1::bigint"
        let sql = parts.isEmpty ? answer : "WITH " + parts.joined(separator: ",\n") + "\n" + answer
        return PostgresQuery(unsafeSQL: sql, binds: statement.binds)
    }
}

extension OneStatement {
    /// What a code or implicit token of `user` requires to be stored: the user enabled, their
    /// access epoch still `accessEpoch`, and their row share-locked until the statement commits.
    /// A revocation of their access moves the epoch first (``AccessRevocation``), which locks
    /// the row: it either waits for this statement and then deletes or revokes what it stored, or
    /// commits first, and this statement, having waited, finds the epoch moved (RV23).
    mutating func accessUnchanged(user: UserID, since accessEpoch: Int) -> String {
        """
        SELECT 1 FROM users WHERE id = \(text(user.rawValue)) AND access_epoch = \(integer(accessEpoch))
            AND disabled_at IS NULL FOR SHARE
        """
    }
}

extension PostgresStore {
    /// Runs a ``OneStatement`` query and answers whether its condition changed a row.
    func runOneStatement(_ query: PostgresQuery, operation: String = #function) async throws -> Bool {
        try await perform(operation: operation) { client in
            if let changed = try await PreparedShape.run(query, on: client) { return changed == 1 }
            var changed: Int64 = 0
            for try await count in try await client.query(query).decode(Int64.self) { changed = count }
            return changed == 1
        }
    }
}
