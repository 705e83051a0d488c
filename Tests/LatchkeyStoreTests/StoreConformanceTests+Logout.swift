import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Back-channel logouts on both stores: queued with the sign-out or the end of the user's access
/// in the same transaction, and claimed by one sender of several at once.
extension StoreConformanceTests {
    @Test(
        "A sign-out queues a logout per app with a back-channel URI and a grant from the session; one claim of eight wins",
        arguments: TestStores.kinds)
    func logoutsAreQueuedAndClaimedOnce(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        var told = Self.client("c1", type: .web, secret: "s")
        told.backchannelLogoutURI = "https://rp.example/logout"
        try await store.insertClient(told)
        try await store.insertClient(Self.client("c2"))
        #expect(try await store.client(id: "c1")?.backchannelLogoutURI == "https://rp.example/logout")
        let session = BrowserSession(
            idHash: "s1", userID: "u1", csrfToken: "x", createdAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(600))
        try await store.insertSession(session)
        for (grant, client) in [("g1", "c1"), ("g2", "c1"), ("g3", "c2")] {
            try await store.insertGrant(
                GrantRecord(
                    id: GrantID(rawValue: grant), clientID: ClientID(rawValue: client), userID: "u1",
                    scope: ScopeSet(["profile"]), createdAt: Self.t0, sid: session.sid), tokens: [])
        }
        #expect(try await store.grant(id: "g1")?.sid == session.sid)
        try await store.signOutSession(idHash: "s1", at: Self.t0)
        #expect(try await store.session(idHash: "s1") == nil)
        let queued = try await store.pendingLogouts()
        #expect(queued.map(\.clientID) == ["c1"] && queued.first?.sid == session.sid && queued.first?.userID == "u1")
        try await store.signOutSession(idHash: "s1", at: Self.t0)
        #expect(try await store.pendingLogouts().count == 1, "a session already ended queues nothing")

        let at = Self.t0.addingTimeInterval(1)
        let lease = at.addingTimeInterval(60)
        let claimed = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 { group.addTask { try await store.claimDueLogouts(at: at, leaseUntil: lease, limit: 5).count } }
            return try await group.reduce(0, +)
        }
        #expect(claimed == 1)
        let id = queued[0].id
        try await store.retryLogout(id: id, claimedUntil: lease, nextAttemptAt: at.addingTimeInterval(10), error: "down")
        #expect(try await store.claimDueLogouts(at: at, leaseUntil: lease, limit: 5).isEmpty)
        let again = try await store.claimDueLogouts(at: at.addingTimeInterval(10), leaseUntil: lease, limit: 5)
        #expect(again.map(\.attempts) == [2] && again.first?.lastError == "down")
        try await store.finishLogout(id: id, claimedUntil: lease, at: at, delivered: true, error: nil)
        #expect(try await store.pendingLogouts().isEmpty)

        // The user's access ending queues a logout per app and session of the live grants.
        try await store.insertSession(session)
        #expect(try await store.setUserDisabled(id: "u1", at: Self.t0.addingTimeInterval(2)))
        let userWide = try await store.pendingLogouts()
        #expect(userWide.map(\.clientID) == ["c1"] && userWide.first?.sid == session.sid)
    }
}
