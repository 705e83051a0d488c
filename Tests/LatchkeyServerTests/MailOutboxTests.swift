import Foundation
import LatchkeyServer
import LatchkeyTestSupport
import Synchronization
import Testing

@Suite("Mail outbox")
struct MailOutboxTests {
    final class Clock: Sendable {
        let time = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        var now: Date { time.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { time.withLock { $0 += seconds } }
    }

    func outbox(_ store: any Store, _ clock: Clock, key: KeyEncryptionKey? = nil) -> MailOutbox {
        MailOutbox(
            store: store, keyEncryptionKey: key ?? KeyEncryptionKey.generate().key, messageIDDomain: "example.com",
            now: { clock.now })
    }

    static let mail = OutgoingMail(
        kind: "test", recipient: "alice@example.com", subject: "Your link", text: "https://id.example/secret-link",
        html: "<a href=\"https://id.example/secret-link\">link</a>")

    @Test("Retries wait 10 s, doubled each time, at most an hour")
    func retryDelays() {
        #expect((1...10).map { MailOutbox.retryDelay(afterAttempt: $0) } == [10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600])
        #expect(MailOutbox.retryDelay(afterAttempt: 1_000) == 3600)
    }

    @Test("The content is sealed in the store and handed over opened, with one Message-ID on every attempt")
    func sealedAndDelivered() async throws {
        let store = try await TestStores.make(.sqlite)
        let clock = Clock()
        let outbox = outbox(store, clock)
        let id = try await outbox.enqueue(Self.mail)
        let stored = try #require(try await store.recentMail(limit: 1).first)
        #expect(!stored.sealedContent.contains("secret-link") && !stored.sealedContent.isEmpty)

        let seen = Mutex<[DueMail]>([])
        var handled = try await outbox.deliverDue { due in
            seen.withLock { $0.append(due) }
            return .tryAgain("421 busy")
        }
        #expect(handled.count == 1)
        #expect(try await outbox.deliverDue { _ in .sent }.isEmpty)  // waits 10 s first
        clock.advance(10)
        handled = try await outbox.deliverDue { due in
            seen.withLock { $0.append(due) }
            return .sent
        }
        #expect(handled.count == 1)
        let attempts = seen.withLock { $0 }
        #expect(attempts.map(\.mail) == [Self.mail, Self.mail] && attempts.map(\.attempt) == [1, 2])
        #expect(attempts[0].messageID == attempts[1].messageID && attempts[0].messageID == "<\(id.rawValue)@example.com>")
        #expect(try await store.mailOutboxCounts() == OutboxCounts(queued: 0, sent: 1, failed: 0))
        #expect(try await store.recentMail(limit: 1).first?.sealedContent == "")
    }

    @Test("A refusal is final at once; a message that cannot go out for a day is given up")
    func givingUp() async throws {
        let store = try await TestStores.make(.sqlite)
        let clock = Clock()
        let outbox = outbox(store, clock)
        try await outbox.enqueue(Self.mail)
        _ = try await outbox.deliverDue { _ in .refused("550 no such user") }
        #expect(try await store.mailOutboxCounts() == OutboxCounts(queued: 0, sent: 0, failed: 1))

        clock.advance(1)
        try await outbox.enqueue(Self.mail)
        var attempts = 0
        while try await store.mailOutboxCounts().queued == 1, attempts < 100 {
            if !(try await outbox.deliverDue { _ in .tryAgain("connection refused") }).isEmpty { attempts += 1 }
            clock.advance(600)
        }
        #expect(try await store.mailOutboxCounts() == OutboxCounts(queued: 0, sent: 0, failed: 2))
        // Every 10 minutes (the test's step) while the delay is shorter, then hourly: about 30 in a day.
        #expect((20...40).contains(attempts), "\(attempts)")
        #expect(try await store.recentMail(limit: 1).first?.lastError == "connection refused")
    }

    @Test("A message claimed again a day after it was queued, its senders having died on it, is given up unsent")
    func deadSenders() async throws {
        let store = try await TestStores.make(.sqlite)
        let clock = Clock()
        let outbox = outbox(store, clock)
        try await outbox.enqueue(Self.mail)
        _ = try await store.claimDueMail(at: clock.now, leaseUntil: clock.now.addingTimeInterval(300), limit: 1)
        clock.advance(MailOutbox.giveUpAfter + 1)
        let handled = try await outbox.deliverDue { _ in
            Issue.record("handed to the relay")
            return .sent
        }
        #expect(handled.count == 1)
        #expect(try await store.mailOutboxCounts() == OutboxCounts(queued: 0, sent: 0, failed: 1))
    }

    @Test("The relay's answer is kept without control characters")
    func printableErrors() async throws {
        let store = try await TestStores.make(.sqlite)
        let clock = Clock()
        let outbox = outbox(store, clock)
        try await outbox.enqueue(Self.mail)
        _ = try await outbox.deliverDue { _ in .refused("550 no\r\n\u{1B}[31mred") }
        #expect(try await store.recentMail(limit: 1).first?.lastError == "550 no   [31mred")
    }

    @Test("A message sealed under another key-encryption key is given up, not sent garbled")
    func otherKey() async throws {
        let store = try await TestStores.make(.sqlite)
        let clock = Clock()
        try await outbox(store, clock).enqueue(Self.mail)
        let handled = try await outbox(store, clock).deliverDue { _ in .sent }
        #expect(handled.count == 1)
        if case .refused = handled[0].1 {} else { Issue.record("expected a refusal, got \(handled[0].1)") }
        #expect(try await store.mailOutboxCounts().failed == 1)
    }
}
