import Foundation
import LatchkeyCore

// The e-mail outbox (MailOutboxStore).
extension SQLDatabase {
    public func enqueueMail(_ message: OutboxMessage) async throws {
        try await insert(
            """
            INSERT INTO mail_outbox (\(sql: Self.outboxColumns))
            VALUES (\(message.id), \(message.kind), \(message.recipient), \(message.sealedContent), \(message.messageID),
                \(message.createdAt), \(message.attempts), \(message.nextAttemptAt), \(message.sentAt), \(message.failedAt),
                \(message.lastError))
            """)
    }

    public func claimDueMail(at: Date, leaseUntil: Date, limit: Int) async throws -> [OutboxMessage] {
        // The condition is written twice: in the choice of rows and on each row as it is
        // updated, where PostgreSQL reads it again after waiting for another claim's lock, so
        // a row another instance just claimed is skipped rather than claimed twice.
        let free: SQLStatement =
            "finished_at IS NULL AND next_attempt_at <= \(at) AND (leased_until IS NULL OR leased_until <= \(at))"
        return try await returning(
            """
            UPDATE mail_outbox SET leased_until = \(leaseUntil), attempts = attempts + 1
            WHERE id IN (SELECT id FROM mail_outbox WHERE \(free) ORDER BY next_attempt_at, id LIMIT \(limit)) AND \(free)
            RETURNING \(sql: Self.outboxColumns)
            """, Self.outboxMessage)
    }

    public func markMailSent(id: OutboxMessageID, at: Date) async throws {
        try await run(
            """
            UPDATE mail_outbox SET sent_at = \(at), finished_at = \(at), leased_until = NULL, sealed_content = '',
                last_error = NULL
            WHERE id = \(id) AND finished_at IS NULL
            """)
    }

    public func markMailForRetry(id: OutboxMessageID, claimedUntil: Date, nextAttemptAt: Date, error: String) async throws {
        try await run(
            """
            UPDATE mail_outbox SET next_attempt_at = \(nextAttemptAt), leased_until = NULL, last_error = \(error)
            WHERE id = \(id) AND finished_at IS NULL AND leased_until = \(claimedUntil)
            """)
    }

    public func markMailFailed(id: OutboxMessageID, claimedUntil: Date, at: Date, error: String) async throws {
        try await run(
            """
            UPDATE mail_outbox SET failed_at = \(at), finished_at = \(at), leased_until = NULL, sealed_content = '',
                last_error = \(error)
            WHERE id = \(id) AND finished_at IS NULL AND leased_until = \(claimedUntil)
            """)
    }

    public func mailOutboxCounts() async throws -> OutboxCounts {
        try await row(
            """
            SELECT COALESCE(SUM(CASE WHEN finished_at IS NULL THEN 1 ELSE 0 END), 0),
                COALESCE(SUM(CASE WHEN sent_at IS NOT NULL THEN 1 ELSE 0 END), 0),
                COALESCE(SUM(CASE WHEN failed_at IS NOT NULL THEN 1 ELSE 0 END), 0)
            FROM mail_outbox
            """
        ) { row in OutboxCounts(queued: try row.int(0), sent: try row.int(1), failed: try row.int(2)) }
            ?? OutboxCounts(queued: 0, sent: 0, failed: 0)
    }

    public func recentMail(limit: Int) async throws -> [OutboxMessage] {
        try await rows(
            "SELECT \(sql: Self.outboxColumns) FROM mail_outbox ORDER BY created_at DESC, id DESC LIMIT \(limit)",
            Self.outboxMessage)
    }

    private static var outboxColumns: String {
        """
        id, kind, recipient, sealed_content, message_id, created_at, attempts, next_attempt_at, sent_at, failed_at, \
        last_error
        """
    }

    @Sendable private static func outboxMessage(_ row: any SQLRow) throws -> OutboxMessage {
        OutboxMessage(
            id: try row.key(0), kind: try row.string(1), recipient: try row.string(2), sealedContent: try row.string(3),
            messageID: try row.string(4), createdAt: try row.date(5), attempts: try row.int(6),
            nextAttemptAt: try row.date(7), sentAt: try row.optionalDate(8), failedAt: try row.optionalDate(9),
            lastError: try row.optionalString(10))
    }
}
