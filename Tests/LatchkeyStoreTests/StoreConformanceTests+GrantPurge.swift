import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Grants on both stores: the purge deletes one once its tokens are gone, and not while a token of
/// it lives on or its session does.
extension StoreConformanceTests {
    @Test(
        "The purge deletes a grant whose tokens are gone, keeps one a rotation or a live session keeps, and later deletes it",
        arguments: TestStores.kinds)
    func spentGrantsArePurged(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        try await store.insertClient(Self.client("c1"))
        let hour = Self.t0.addingTimeInterval(3_600)
        // g1: one access token, as client credentials leave. g2: a refresh token rotated to one
        // that lives a day. g3: from a session that lives a day. g4: no token at all.
        try await store.insertGrant(Self.grant("g1"), tokens: [Self.token("a1", grant: "g1")])
        try await store.insertGrant(Self.grant("g2"), tokens: [Self.token("r2", kind: .refresh, grant: "g2")])
        var successor = Self.token("r3", kind: .refresh, grant: "g2")
        successor.expiresAt = Self.t0.addingTimeInterval(86_400)
        #expect(try await store.rotateRefreshToken(hash: "r2", successors: [successor], at: Self.t0.addingTimeInterval(60)))
        let session = BrowserSession(
            idHash: "s1", userID: "u1", csrfToken: "x", createdAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(86_400))
        try await store.insertSession(session)
        var fromSession = Self.grant("g3")
        fromSession.sid = session.sid
        try await store.insertGrant(fromSession, tokens: [Self.token("a3", grant: "g3")])
        try await store.insertGrant(Self.grant("g4"), tokens: [])

        // Within the 600 s kept for replays after the last token expired, only the grant without
        // tokens goes (600 s after it was made).
        #expect(try await store.purgeExpired(at: hour.addingTimeInterval(599), retention: 600, activityRetention: 86_400) == 1)
        for id in ["g1", "g2", "g3"] { #expect(try await store.grant(id: GrantID(rawValue: id)) != nil, "\(id)") }
        #expect(try await store.grant(id: "g4") == nil)

        let purged = try await store.purgeExpired(at: hour.addingTimeInterval(601), retention: 600, activityRetention: 86_400)
        #expect(try await store.grant(id: "g1") == nil)
        #expect(try await store.grant(id: "g2") != nil, "its rotated refresh token lives on")
        #expect(try await store.token(hash: "r3") != nil)
        #expect(try await store.grant(id: "g3") != nil, "its session lives on")
        // a1, r2, a3 and the grant g1: moving g2's expiry on is not counted.
        #expect(purged == 4)

        // A day and the time kept later, the rotated token, the session and both grants are gone.
        let later = Self.t0.addingTimeInterval(86_400 + 601)
        #expect(try await store.purgeExpired(at: later, retention: 600, activityRetention: 86_400) == 4)
        #expect(try await store.grant(id: "g2") == nil)
        #expect(try await store.grant(id: "g3") == nil)
    }
}
