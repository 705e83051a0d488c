import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The e-mail outbox on both stores: claimed once while leased, retried, finished, counted, purged.
extension StoreConformanceTests {
    static func outboxMessage(_ id: String, at: Date = t0) -> OutboxMessage {
        OutboxMessage(
            id: OutboxMessageID(rawValue: id), kind: "test", recipient: "alice@example.com", sealedContent: "sealed-\(id)",
            messageID: "<\(id)@example.com>", createdAt: at)
    }

    @Test(
        "Outbox: a due message is claimed once while leased, retried when told, finished without its content",
        arguments: TestStores.kinds)
    func outbox(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.enqueueMail(Self.outboxMessage("m1"))
        try await store.enqueueMail(Self.outboxMessage("m2", at: Self.t0.addingTimeInterval(1)))
        #expect(try await store.mailOutboxCounts() == OutboxCounts(queued: 2, sent: 0, failed: 0))
        // Not due before it was queued.
        #expect(try await store.claimDueMail(at: Self.t0.addingTimeInterval(-1), leaseUntil: Self.t0, limit: 10).isEmpty)

        let lease = Self.t0.addingTimeInterval(300)
        let first = try await store.claimDueMail(at: Self.t0.addingTimeInterval(2), leaseUntil: lease, limit: 1)
        #expect(first.map(\.id.rawValue) == ["m1"] && first.first?.attempts == 1)
        #expect(first.first?.sealedContent == "sealed-m1" && first.first?.messageID == "<m1@example.com>")
        let second = try await store.claimDueMail(at: Self.t0.addingTimeInterval(2), leaseUntil: lease, limit: 10)
        #expect(second.map(\.id.rawValue) == ["m2"])
        // Both are leased: nothing more until a lease ends.
        #expect(try await store.claimDueMail(at: Self.t0.addingTimeInterval(299), leaseUntil: lease, limit: 10).isEmpty)

        // A sender that does not hold the claim changes nothing.
        try await store.markMailForRetry(
            id: "m1", claimedUntil: lease.addingTimeInterval(1), nextAttemptAt: Self.t0, error: "not mine")
        try await store.markMailFailed(id: "m1", claimedUntil: lease.addingTimeInterval(1), at: Self.t0, error: "not mine")
        #expect(try await store.mailOutboxCounts() == OutboxCounts(queued: 2, sent: 0, failed: 0))
        try await store.markMailForRetry(
            id: "m1", claimedUntil: lease, nextAttemptAt: Self.t0.addingTimeInterval(60), error: "451 try later")
        #expect(try await store.claimDueMail(at: Self.t0.addingTimeInterval(59), leaseUntil: lease, limit: 10).isEmpty)
        let again = try await store.claimDueMail(at: Self.t0.addingTimeInterval(60), leaseUntil: lease, limit: 10)
        #expect(again.map(\.id.rawValue) == ["m1"] && again.first?.attempts == 2 && again.first?.lastError == "451 try later")

        try await store.markMailSent(id: "m1", at: Self.t0.addingTimeInterval(61))
        // m2's sender died: once its lease has ended it is claimed again.
        let relet = lease.addingTimeInterval(300)
        let reclaimed = try await store.claimDueMail(at: lease, leaseUntil: relet, limit: 10)
        #expect(reclaimed.map(\.id.rawValue) == ["m2"] && reclaimed.first?.attempts == 2)
        // The first sender, back late, cannot touch the new claim.
        try await store.markMailForRetry(id: "m2", claimedUntil: lease, nextAttemptAt: lease, error: "late")
        #expect(try await store.claimDueMail(at: lease, leaseUntil: relet, limit: 10).isEmpty)
        try await store.markMailFailed(id: "m2", claimedUntil: relet, at: lease, error: "550 no such user")
        // Finished is final: a late retry or a second outcome changes nothing.
        try await store.markMailForRetry(id: "m2", claimedUntil: relet, nextAttemptAt: lease, error: "late")
        try await store.markMailSent(id: "m2", at: lease)

        #expect(try await store.mailOutboxCounts() == OutboxCounts(queued: 0, sent: 1, failed: 1))
        #expect(try await store.claimDueMail(at: lease.addingTimeInterval(3600), leaseUntil: lease, limit: 10).isEmpty)
        let recent = try await store.recentMail(limit: 10)
        #expect(recent.map(\.id.rawValue) == ["m2", "m1"])
        #expect(recent.allSatisfy { $0.sealedContent.isEmpty })
        #expect(recent[0].failedAt == lease && recent[0].lastError == "550 no such user" && recent[0].sentAt == nil)
        #expect(recent[1].sentAt == Self.t0.addingTimeInterval(61) && recent[1].lastError == nil)

        // Finished messages are kept as activity, then purged; queued ones never are.
        try await store.enqueueMail(Self.outboxMessage("m3"))
        _ = try await store.purgeExpired(at: lease.addingTimeInterval(86_401), retention: 0, activityRetention: 86_400)
        #expect(try await store.recentMail(limit: 10).map(\.id.rawValue) == ["m3"])
    }

    @Test("Outbox: claims racing each other never take the same message twice", arguments: TestStores.kinds)
    func outboxClaimRace(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        for index in 0..<40 { try await store.enqueueMail(Self.outboxMessage(String(format: "r%02d", index))) }
        let at = Self.t0.addingTimeInterval(1)
        let claims = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await store.claimDueMail(at: at, leaseUntil: at.addingTimeInterval(300), limit: 7).map(\.id.rawValue)
                }
            }
            return try await group.reduce(into: [String]()) { $0 += $1 }
        }
        // A claim that waited for another's locks may take fewer than its limit; what is left is
        // claimed afterwards, and no message is ever in two claims.
        let rest = try await store.claimDueMail(at: at, leaseUntil: at.addingTimeInterval(300), limit: 100).map(\.id.rawValue)
        let all = claims + rest
        #expect(all.count == Set(all).count)
        #expect(all.count == 40)
    }
}
