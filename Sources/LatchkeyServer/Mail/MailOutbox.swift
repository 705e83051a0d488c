import Foundation
import LatchkeyCore

/// An e-mail to send: what a feature (verification, reset, a test) hands the outbox.
public struct OutgoingMail: Sendable, Equatable, Codable {
    /// What it is for (`test`, `email_verification`, …), shown to administrators.
    public var kind: String
    public var recipient: String
    public var subject: String
    public var text: String
    public var html: String?

    public init(kind: String, recipient: String, subject: String, text: String, html: String? = nil) {
        self.kind = kind
        self.recipient = recipient
        self.subject = subject
        self.text = text
        self.html = html
    }
}

/// A message the outbox hands to the relay: its content opened, its `Message-ID` fixed.
public struct DueMail: Sendable, Equatable {
    public var id: OutboxMessageID
    public var mail: OutgoingMail
    public var messageID: String
    public var createdAt: Date
    /// This attempt's number, from 1.
    public var attempt: Int
}

/// What became of one attempt.
public enum MailDeliveryOutcome: Sendable, Equatable {
    case sent
    /// The relay could not take it now (a connection, TLS or 4xx failure): try again later.
    case tryAgain(String)
    /// The relay refused it for good (5xx) or the settings cannot work: give up.
    case refused(String)
}

/// The outbox: messages are stored (content sealed with the key-encryption key, bound to the
/// message's id), then sent by ``deliverDue(limit:_:)`` as often as the sender service runs it,
/// on whichever instance claims them. A failed attempt is retried with a growing delay (10 s,
/// doubled each time, at most an hour) until ``giveUpAfter`` has passed since the message was
/// queued; a refusal is final at once.
public struct MailOutbox: Sendable {
    public let store: any MailOutboxStore
    let keyEncryptionKey: KeyEncryptionKey
    let now: @Sendable () -> Date
    /// The domain of `Message-ID`s (the sender's).
    let messageIDDomain: String

    /// How long a claimed message is left to its sender before another may take it.
    public static let lease: TimeInterval = 5 * 60
    /// How long after it was queued a message that cannot be sent is given up.
    public static let giveUpAfter: TimeInterval = 24 * 3600

    public init(
        store: any MailOutboxStore, keyEncryptionKey: KeyEncryptionKey, messageIDDomain: String,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.keyEncryptionKey = keyEncryptionKey
        self.messageIDDomain = messageIDDomain
        self.now = now
    }

    /// Stores `mail` for sending; answers its id.
    @discardableResult
    public func enqueue(_ mail: OutgoingMail) async throws -> OutboxMessageID {
        let id = OutboxMessageID(rawValue: TimeOrderedID.make(at: now()))
        let content = try JSONEncoder().encode(mail)
        let message = OutboxMessage(
            id: id, kind: mail.kind, recipient: mail.recipient,
            sealedContent: try keyEncryptionKey.seal(content, kid: Self.binding(id)),
            messageID: "<\(id.rawValue)@\(messageIDDomain)>", createdAt: now())
        try await store.enqueueMail(message)
        return id
    }

    /// Claims due messages one at a time (at most `limit`), hands each to `deliver`, and records
    /// what happened. Each claim covers one message, so a slow relay never holds others past
    /// their claim. Answers each message handled with its outcome; none when nothing was due.
    public func deliverDue(limit: Int = 10, _ deliver: @Sendable (DueMail) async -> MailDeliveryOutcome) async throws
        -> [(OutboxMessage, MailDeliveryOutcome)]
    {
        var handled: [(OutboxMessage, MailDeliveryOutcome)] = []
        while handled.count < limit, !Task.isCancelled {
            let at = now()
            let lease = at.addingTimeInterval(Self.lease)
            guard let message = try await store.claimDueMail(at: at, leaseUntil: lease, limit: 1).first else { break }
            let outcome: MailDeliveryOutcome
            if at.timeIntervalSince(message.createdAt) > Self.giveUpAfter {
                // Claimed again and again without an outcome (a sender that died on it each time).
                outcome = .refused(message.lastError ?? "Not sent within a day of being queued.")
            } else if let mail = try? JSONDecoder().decode(
                OutgoingMail.self, from: keyEncryptionKey.open(message.sealedContent, kid: Self.binding(message.id)))
            {
                outcome = await deliver(
                    DueMail(
                        id: message.id, mail: mail, messageID: message.messageID, createdAt: message.createdAt,
                        attempt: message.attempts))
            } else {
                outcome = .refused("The message cannot be opened: it was sealed with another key-encryption key.")
            }
            try await record(outcome, for: message, claimedUntil: lease)
            handled.append((message, outcome))
        }
        return handled
    }

    private func record(_ outcome: MailDeliveryOutcome, for message: OutboxMessage, claimedUntil lease: Date) async throws {
        let at = now()
        switch outcome {
        case .sent:
            try await store.markMailSent(id: message.id, at: at)
        case .refused(let error):
            try await store.markMailFailed(id: message.id, claimedUntil: lease, at: at, error: Self.printable(error))
        case .tryAgain(let error):
            let next = at.addingTimeInterval(Self.retryDelay(afterAttempt: message.attempts))
            if next.timeIntervalSince(message.createdAt) > Self.giveUpAfter {
                try await store.markMailFailed(id: message.id, claimedUntil: lease, at: at, error: Self.printable(error))
            } else {
                try await store.markMailForRetry(
                    id: message.id, claimedUntil: lease, nextAttemptAt: next, error: Self.printable(error))
            }
        }
    }

    /// A relay's answer as it is kept and shown: control characters as spaces, at most 500 characters.
    static func printable(_ text: String) -> String {
        String(String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) }).prefix(500))
    }

    /// 10 s after the first attempt (a relay restarting is back by then), doubled after each, at
    /// most an hour.
    public static func retryDelay(afterAttempt attempt: Int) -> TimeInterval {
        min(3600, 10 * pow(2, Double(max(0, min(attempt, 20) - 1))))
    }

    /// What the sealed content is bound to, so it cannot be moved to another row.
    private static func binding(_ id: OutboxMessageID) -> String { "mail:" + id.rawValue }
}
