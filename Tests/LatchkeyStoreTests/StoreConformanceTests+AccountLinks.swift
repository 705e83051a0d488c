import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// E-mailed links on both stores: found while usable, replaced by a newer one, used once (also
/// by many at once), each use making its change in the same transaction; purged once expired.
extension StoreConformanceTests {
    static func link(
        _ secret: String, _ purpose: AccountLinkPurpose, user: String? = "u1", email: String = "alice@example.org",
        lifetime: TimeInterval = 3600, at: Date = t0
    ) -> AccountLink {
        AccountLink(
            hash: AccountLinkHash(of: secret), purpose: purpose, userID: user.map { UserID(rawValue: $0) }, email: email,
            createdAt: at, expiresAt: at.addingTimeInterval(lifetime))
    }

    @Test("AC2 A verification link is found while usable, replaced by a newer one, and used once", arguments: TestStores.kinds)
    func verificationLink(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        let old = Self.link("old", .emailVerification, email: "old@example.org")
        try await store.insertAccountLink(old)
        #expect(try await store.accountLink(hash: old.hash, purpose: .emailVerification, at: Self.t0) == old)
        // Not as another purpose, and not once expired.
        #expect(try await store.accountLink(hash: old.hash, purpose: .passwordReset, at: Self.t0) == nil)
        #expect(try await store.accountLink(hash: old.hash, purpose: .emailVerification, at: old.expiresAt) == nil)

        let new = Self.link("new", .emailVerification, email: "new@example.org", at: Self.t0.addingTimeInterval(1))
        try await store.insertAccountLink(new)
        #expect(try await store.accountLink(hash: old.hash, purpose: .emailVerification, at: Self.t0) == nil)
        #expect(try await !store.verifyEmail(link: old.hash, at: Self.t0.addingTimeInterval(2)))
        #expect(try await !store.verifyEmail(link: new.hash, at: new.expiresAt))

        #expect(try await store.verifyEmail(link: new.hash, at: Self.t0.addingTimeInterval(2)))
        let user = try #require(try await store.user(id: "u1"))
        #expect(user.email == "new@example.org" && user.emailVerified && user.updatedAt == Self.t0.addingTimeInterval(2))
        #expect(try await !store.verifyEmail(link: new.hash, at: Self.t0.addingTimeInterval(3)))
        #expect(try await store.accountLink(hash: new.hash, purpose: .emailVerification, at: Self.t0) == nil)

        // Expired links go with the purge.
        try await store.insertAccountLink(Self.link("late", .passwordReset))
        _ = try await store.purgeExpired(at: Self.t0.addingTimeInterval(3601), retention: 0, activityRetention: 86_400)
        #expect(try await !store.resetPassword(link: AccountLinkHash(of: "late"), passwordHash: "x", at: Self.t0))
    }

    @Test(
        "AC2 A reset link sets the password, ends the sessions and revokes the grants, once, of many tried at once",
        arguments: TestStores.kinds)
    func resetLinkRace(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        try await store.insertSession(
            BrowserSession(
                idHash: "s1", userID: "u1", csrfToken: "x", createdAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(60)))
        try await store.insertGrant(Self.grant(), tokens: [Self.token("t1", kind: .refresh)])
        let link = Self.link("reset", .passwordReset)
        try await store.insertAccountLink(link)
        let at = Self.t0.addingTimeInterval(5)
        let uses = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<8 {
                group.addTask { try await store.resetPassword(link: link.hash, passwordHash: "$2b$04$n\(index)", at: at) }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(uses.filter { $0 }.count == 1)
        #expect(try await store.user(id: "u1")?.passwordHash.hasPrefix("$2b$04$n") == true)
        #expect(try await store.session(idHash: "s1") == nil)
        #expect(try await store.token(hash: "t1")?.isActive(at: at) == false)
    }

    @Test("AC2 An invitation makes one account, of many sign-ups tried with it at once", arguments: TestStores.kinds)
    func invitationRace(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let invitation = Self.link("invite", .invitation, user: nil, email: "noor@example.net")
        try await store.insertAccountLink(invitation)
        let at = Self.t0.addingTimeInterval(5)
        let made = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<8 {
                group.addTask {
                    var user = Self.user("u\(index)", "noor\(index)")
                    user.email = "noor@example.net"
                    user.emailVerified = true
                    return try await store.insertUser(user, invitation: invitation.hash, at: at)
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(made.filter { $0 }.count == 1)
        #expect(try await store.users().count == 1)
        // Without an invitation, the same operation is a plain insert; with a mark to verify first.
        var signedUp = Self.user("u9", "mia")
        signedUp.mustVerifyEmail = true
        #expect(try await store.insertUser(signedUp, invitation: nil, at: at))
        #expect(try await store.user(id: "u9")?.mustVerifyEmail == true)
    }
}
