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
        /// Whether the rows stay for the retention period after they expire.
        var isRetained: Bool
    }

    static let steps = [
        Step(table: "sessions", key: "id_hash", expiry: "expires_at", isRetained: false),
        Step(table: "pending_authorizations", key: "id", expiry: "expires_at", isRetained: false),
        Step(table: "throttles", key: "key", expiry: "ends_at", isRetained: false),
        Step(table: "authorization_codes", key: "code_hash", expiry: "expires_at", isRetained: true),
        Step(table: "tokens", key: "hash", expiry: "expires_at", isRetained: true),
    ]

    /// Rows deleted per statement.
    public static let batchSize = 500

    /// Deletes, table by table, every row past its expiry.
    /// - Parameter deleteBatch: runs one statement (plain SQL that both dialects read alike, with
    ///   one `?` for the cutoff, in seconds since 1970) in a transaction of its own and returns how
    ///   many rows it deleted.
    /// - Returns: how many rows went.
    public static func run(
        at now: Date, retention: TimeInterval, deleteBatch: (_ sql: String, _ cutoff: Double) async throws -> Int
    ) async throws -> Int {
        var total = 0
        for step in steps {
            let cutoff = (step.isRetained ? now.addingTimeInterval(-retention) : now).timeIntervalSince1970
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
