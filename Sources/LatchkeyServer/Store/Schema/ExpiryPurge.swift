import Foundation

/// What housekeeping deletes, and how, for every store: the tables with an expiry, each emptied of
/// expired rows in batches of ``batchSize``, one short transaction per batch, so a token request
/// waits at most one batch for the writer. Codes and tokens are kept `retention` seconds past
/// their expiry, so a late replay is still recognised as one.
public enum ExpiryPurge {
    struct Step {
        var table: String
        /// The primary key, by which a batch is chosen.
        var key: String
        var expiry: String
        /// How long the rows stay after the time in `expiry`.
        var kept: Kept
    }

    enum Kept { case no, forReplays, asActivity }

    static let steps = [
        Step(table: "sessions", key: "id_hash", expiry: "expires_at", kept: .no),
        Step(table: "pending_authorizations", key: "id", expiry: "expires_at", kept: .no),
        Step(table: "throttles", key: "key", expiry: "ends_at", kept: .no),
        Step(table: "authorization_codes", key: "code_hash", expiry: "expires_at", kept: .forReplays),
        Step(table: "tokens", key: "hash", expiry: "expires_at", kept: .forReplays),
        Step(table: "audit_events", key: "id", expiry: "at", kept: .asActivity),
        // A retired signing key's `published_until` already covers the tokens it signed.
        Step(table: "signing_keys", key: "kid", expiry: "published_until", kept: .no),
    ]

    /// Rows deleted per statement.
    public static let batchSize = 500

    /// Deletes, table by table, every row past its expiry.
    /// - Parameters:
    ///   - activityRetention: how long audit events are kept.
    ///   - deleteBatch: runs one statement (plain SQL that both dialects read alike, with
    ///   one `?` for the cutoff, in seconds since 1970) in a transaction of its own and returns how
    ///   many rows it deleted.
    /// - Returns: how many rows went.
    public static func run(
        at now: Date, retention: TimeInterval, activityRetention: TimeInterval,
        deleteBatch: (_ sql: String, _ cutoff: Double) async throws -> Int
    ) async throws -> Int {
        var total = 0
        for step in steps {
            let kept: TimeInterval =
                switch step.kept {
                case .no: 0
                case .forReplays: retention
                case .asActivity: activityRetention
                }
            let cutoff = now.addingTimeInterval(-kept).timeIntervalSince1970
            let sql = """
                DELETE FROM \(step.table) WHERE \(step.key) IN \
                (SELECT \(step.key) FROM \(step.table) WHERE \(step.expiry) < ? LIMIT \(batchSize))
                """
            while true {
                let deleted = try await deleteBatch(sql, cutoff)
                total += deleted
                if deleted < batchSize { break }
            }
        }
        return total
    }
}
