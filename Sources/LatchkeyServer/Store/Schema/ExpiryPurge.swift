import Foundation

/// What housekeeping deletes, and how, for every store: the tables with an expiry, each emptied of
/// expired rows in batches (``batchSize`` rows, unless the store asks for fewer), one short
/// transaction per batch, so a token request waits at most one batch for the writer. Codes and
/// tokens are kept `retention` seconds past their expiry, so a late replay is still recognised as one.
public enum ExpiryPurge {
    struct Step {
        var table: String
        /// The primary key, by which a batch is chosen.
        var key: String
        var expiry: String
        /// How long the rows stay after the time in `expiry`.
        var kept: Kept
        /// More SQL the rows must match, or empty.
        var condition = ""
        /// An update run in batches before the deletion (one `?` for the cutoff; it must move the
        /// rows it changes out of the range), given the batch size, or `nil`.
        var before: (@Sendable (_ batchSize: Int) -> String)? = nil
    }

    enum Kept { case no, forReplays, asActivity, whileUnused }

    /// A client that registered itself and was never used: no pending request, code, consent or
    /// grant ever named it.
    static let unusedSelfRegistered = """
         AND registration <> 'admin'
         AND NOT EXISTS (SELECT 1 FROM pending_authorizations p WHERE p.client_id = clients.id)
         AND NOT EXISTS (SELECT 1 FROM authorization_codes c WHERE c.client_id = clients.id)
         AND NOT EXISTS (SELECT 1 FROM consents s WHERE s.client_id = clients.id)
         AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.client_id = clients.id)
        """

    /// A grant with no token left, and whose session (if it names one) has ended: a back-channel
    /// logout for that session must still find the apps it signed in to (``LogoutQueue``).
    static let spentGrant = """
         AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = grants.id)
         AND (grants.sid IS NULL OR NOT EXISTS (SELECT 1 FROM sessions s WHERE s.sid = grants.sid))
        """

    /// Grants past their expiry with a token that expires later (a rotation stored a later
    /// refresh token): their expiry moved to their last token's. A grant this changes no longer
    /// matches, so the batches end; and the tokens past the same cutoff are deleted by then, so it
    /// leaves the range too. A grant whose tokens live on is looked at once a rotation outlived
    /// it, not on every run.
    static func grantExpiryMovedOn(batchSize: Int) -> String {
        """
        UPDATE grants SET expires_at = (SELECT max(t.expires_at) FROM tokens t WHERE t.grant_id = grants.id) \
        WHERE id IN (SELECT g.id FROM grants g WHERE g.expires_at < ? \
        AND EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = g.id AND t.expires_at > g.expires_at) LIMIT \(batchSize))
        """
    }

    /// How long a client that registered itself may stay unused before it is deleted, by default.
    public static let defaultUnusedRegistrationRetention: TimeInterval = 7 * 86_400

    static let steps = [
        Step(table: "sessions", key: "id_hash", expiry: "expires_at", kept: .no),
        Step(table: "pending_authorizations", key: "id", expiry: "expires_at", kept: .no),
        Step(table: "throttles", key: "key", expiry: "ends_at", kept: .no),
        Step(table: "authorization_codes", key: "code_hash", expiry: "expires_at", kept: .forReplays),
        Step(table: "tokens", key: "hash", expiry: "expires_at", kept: .forReplays),
        Step(table: "audit_events", key: "id", expiry: "at", kept: .asActivity),
        // A retired signing key's `published_until` already covers the tokens it signed.
        Step(table: "signing_keys", key: "kid", expiry: "published_until", kept: .no),
        Step(table: "initial_access_tokens", key: "token_hash", expiry: "expires_at", kept: .no),
        Step(table: "pushed_authorization_requests", key: "request_uri_hash", expiry: "expires_at", kept: .no),
        // Kept as long as codes are, so a device code replayed late still finds its grant to revoke.
        Step(table: "device_authorizations", key: "device_code_hash", expiry: "expires_at", kept: .forReplays),
        // After the tokens and codes: kept for replays as they are, since a replayed code or
        // refresh token revokes its grant.
        Step(
            table: "grants", key: "id", expiry: "expires_at", kept: .forReplays,
            condition: spentGrant.replacingOccurrences(of: "\n", with: " "), before: grantExpiryMovedOn(batchSize:)),
        Step(table: "dpop_proofs", key: "proof_hash", expiry: "expires_at", kept: .no),
        Step(table: "dpop_nonces", key: "nonce_hash", expiry: "expires_at", kept: .no),
        // Kept as long as codes are past their expiry, so an instance whose clock runs slow
        // still finds an assertion it would take for unexpired.
        Step(table: "used_assertions", key: "assertion_hash", expiry: "expires_at", kept: .forReplays),
        // Sent or given up: kept, without its content, as long as the activity log.
        Step(table: "mail_outbox", key: "id", expiry: "finished_at", kept: .asActivity),
        // Delivered or given up: kept as long as the activity log, for operators to see.
        Step(table: "logout_deliveries", key: "id", expiry: "finished_at", kept: .asActivity),
        Step(table: "account_links", key: "hash", expiry: "expires_at", kept: .no),
        Step(table: "passkey_challenges", key: "hash", expiry: "expires_at", kept: .no),
        Step(table: "federation_requests", key: "state_hash", expiry: "expires_at", kept: .no),
        Step(
            table: "clients", key: "id", expiry: "created_at", kept: .whileUnused,
            condition: unusedSelfRegistered.replacingOccurrences(of: "\n", with: " ")),
    ]

    /// Rows deleted per statement, unless the store asks for fewer.
    public static let batchSize = 500

    /// Deletes, table by table, every row past its expiry.
    /// - Parameters:
    ///   - activityRetention: how long audit events are kept.
    ///   - unusedRegistrationRetention: how long a self-registered client may stay unused.
    ///   - batchSize: rows deleted or changed per statement: how long each holds the writer.
    ///   - deleteBatch: runs one statement (plain SQL that both dialects read alike, with
    ///   one `?` for the cutoff, in seconds since 1970) in a transaction of its own and returns how
    ///   many rows it deleted or changed.
    /// - Returns: how many rows went.
    public static func run(
        at now: Date, retention: TimeInterval, activityRetention: TimeInterval,
        unusedRegistrationRetention: TimeInterval = defaultUnusedRegistrationRetention, batchSize: Int = batchSize,
        deleteBatch: (_ sql: String, _ cutoff: Double) async throws -> Int
    ) async throws -> Int {
        var total = 0
        for step in steps {
            let kept: TimeInterval =
                switch step.kept {
                case .no: 0
                case .forReplays: retention
                case .asActivity: activityRetention
                case .whileUnused: unusedRegistrationRetention
                }
            let cutoff = now.addingTimeInterval(-kept).timeIntervalSince1970
            if let before = step.before {
                let update = before(batchSize)
                while try await deleteBatch(update, cutoff) == batchSize {}
            }
            let sql = """
                DELETE FROM \(step.table) WHERE \(step.key) IN \
                (SELECT \(step.key) FROM \(step.table) WHERE \(step.expiry) < ?\(step.condition) LIMIT \(batchSize))
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
