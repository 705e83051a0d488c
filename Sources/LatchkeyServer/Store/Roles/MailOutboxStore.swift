import Foundation

/// One e-mail in the outbox. Its content (subject, text and HTML) is sealed with the
/// key-encryption key (``MailOutbox``): the store never holds it readable, and it is erased once
/// the message is sent or given up.
public struct OutboxMessage: Sendable, Equatable {
    public var id: OutboxMessageID
    /// What the message is for (`test`, `email_verification`, `password_reset`…), for the console and metrics.
    public var kind: String
    public var recipient: String
    /// Empty once the message is finished.
    public var sealedContent: String
    /// `Message-ID`, the same on every attempt, so a message sent twice can be recognised as one.
    public var messageID: String
    public var createdAt: Date
    /// Attempts begun, counted as each is claimed.
    public var attempts: Int
    public var nextAttemptAt: Date
    public var sentAt: Date?
    public var failedAt: Date?
    /// The relay's last answer (or the connection's failure) when an attempt did not send it.
    public var lastError: String?

    public init(
        id: OutboxMessageID, kind: String, recipient: String, sealedContent: String, messageID: String, createdAt: Date,
        attempts: Int = 0, nextAttemptAt: Date? = nil, sentAt: Date? = nil, failedAt: Date? = nil, lastError: String? = nil
    ) {
        self.id = id
        self.kind = kind
        self.recipient = recipient
        self.sealedContent = sealedContent
        self.messageID = messageID
        self.createdAt = createdAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt ?? createdAt
        self.sentAt = sentAt
        self.failedAt = failedAt
        self.lastError = lastError
    }
}

/// How many messages wait, went out and were given up.
public struct OutboxCounts: Sendable, Equatable {
    public var queued: Int
    public var sent: Int
    public var failed: Int

    public init(queued: Int, sent: Int, failed: Int) {
        self.queued = queued
        self.sent = sent
        self.failed = failed
    }
}

/// The outbox: e-mail stored in the same store as everything else, so a message is never lost to
/// a crash or a relay that is down, and sent by whichever instance claims it first.
public protocol MailOutboxStore: Sendable {
    func enqueueMail(_ message: OutboxMessage) async throws
    /// Claims up to `limit` messages due at `at` and not claimed by anyone else, until
    /// `leaseUntil`, counting an attempt for each. Two instances never claim the same message
    /// while its lease runs; a message whose sender died is claimed again when the lease ends.
    func claimDueMail(at: Date, leaseUntil: Date, limit: Int) async throws -> [OutboxMessage]
    /// The relay took it: finished, content erased (even when the claim has run out meanwhile,
    /// so no other sender tries it again).
    func markMailSent(id: OutboxMessageID, at: Date) async throws
    /// Not sent this time: due again at `nextAttemptAt`. Only while the claim that ends at
    /// `claimedUntil` is still the message's: a sender whose claim ran out and was taken over
    /// changes nothing.
    func markMailForRetry(id: OutboxMessageID, claimedUntil: Date, nextAttemptAt: Date, error: String) async throws
    /// Given up: finished, content erased; only under the same claim.
    func markMailFailed(id: OutboxMessageID, claimedUntil: Date, at: Date, error: String) async throws
    func mailOutboxCounts() async throws -> OutboxCounts
    /// The newest messages, queued and finished, for administrators.
    func recentMail(limit: Int) async throws -> [OutboxMessage]
}
