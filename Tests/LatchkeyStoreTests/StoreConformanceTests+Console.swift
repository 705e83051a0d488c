import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The operations the admin console added, on both stores.
extension StoreConformanceTests {
    @Test(
        "Users: role and disabled round-trip; disabling ends sessions, unredeemed codes, grants and tokens",
        arguments: TestStores.kinds)
    func disableUser(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        var admin = Self.user("u1", "alice")
        admin.role = .admin
        try await store.insertUser(admin)
        try await store.insertUser(Self.user("u2", "bob"))
        #expect(try await store.user(id: "u1")?.role == .admin)
        #expect(try await store.setUserRole(id: "u1", role: .none))
        #expect(try await store.user(id: "u1")?.role == UserRole.none)
        #expect(try await !store.setUserRole(id: "nobody", role: .admin))

        try await store.insertClient(Self.client())
        try await store.insertSession(
            BrowserSession(
                idHash: "s1", userID: "u1", csrfToken: "x", createdAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(600)))
        try await store.insertAuthorizationCode(Self.code())
        try await store.insertGrant(Self.grant(), tokens: [Self.token("a1"), Self.token("r1", kind: .refresh)])
        // Bob's grant must survive Alice being disabled.
        var bobs = Self.token("b1", grant: "g2")
        bobs.userID = "u2"
        try await store.insertGrant(
            GrantRecord(id: "g2", clientID: "c1", userID: "u2", scope: ScopeSet(["profile"]), createdAt: Self.t0), tokens: [bobs])

        let at = Self.t0.addingTimeInterval(5)
        #expect(try await store.setUserDisabled(id: "u1", at: at))
        #expect(try await store.user(id: "u1")?.disabledAt == at)
        #expect(try await store.session(idHash: "s1") == nil)
        #expect(try await store.authorizationCode(hash: "code1") == nil)
        #expect(try await store.token(hash: "a1")?.revokedAt == at)
        #expect(try await store.token(hash: "r1")?.revokedAt == at)
        #expect(try await store.activeGrants(userID: "u1", at: at).isEmpty)
        #expect(try await store.token(hash: "b1")?.revokedAt == nil)

        #expect(try await store.setUserDisabled(id: "u1", at: nil))
        #expect(try await store.user(id: "u1")?.disabledAt == nil)
        #expect(try await store.token(hash: "a1")?.revokedAt == at, "enabling brings nothing back")
        #expect(try await !store.setUserDisabled(id: "nobody", at: at))
    }

    @Test("Clients: an update changes the editable fields only; first_party round-trips", arguments: TestStores.kinds)
    func updateClient(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        let original = Self.client("c2", type: .web, secret: "s")
        try await store.insertClient(original)
        var changed = original
        changed.name = "Renamed"
        changed.redirectURIs = ["https://app.example/cb"]
        changed.scopes = ScopeSet(["profile"])
        changed.logoURI = nil
        changed.consentMarkdown = "New *text*"
        changed.privacyPolicyURI = "https://app.example/privacy"
        changed.ownerUserID = "u1"
        changed.firstParty = true
        changed.accessTokenLifetime = 600
        changed.refreshTokenLifetime = 86_400
        // Not editable: these must not change.
        changed.secretHash = "other"
        changed.createdAt = Self.t0.addingTimeInterval(99)
        #expect(try await store.updateClient(changed))
        var expected = changed
        expected.secretHash = original.secretHash
        expected.createdAt = original.createdAt
        #expect(try await store.client(id: "c2") == expected)
        #expect(try await store.clients().first { $0.id == "c2" }?.firstParty == true)
        let (read, _) = try await store.clientAndFailures(id: "c2", knownKey: "k", unknownKey: "u", at: Self.t0)
        #expect(read == expected, "the throttle-joined read sees the new column too")
        var missing = changed
        missing.id = "nope"
        #expect(try await !store.updateClient(missing))
    }

    @Test("Sessions by user: listed newest first and ended together with their pending requests", arguments: TestStores.kinds)
    func sessionsByUser(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        for (id, user, offset) in [("s1", "u1", 0.0), ("s2", "u1", 10), ("s3", "u2", 5)] {
            try await store.insertSession(
                BrowserSession(
                    idHash: SessionIDHash(rawValue: id), userID: UserID(rawValue: user), csrfToken: "x",
                    createdAt: Self.t0.addingTimeInterval(offset), expiresAt: Self.t0.addingTimeInterval(600)))
        }
        try await store.insertPendingAuthorization(
            PendingAuthorization(
                id: "p1", sessionIDHash: "s1", clientID: "c1", redirectURI: "http://127.0.0.1/callback",
                redirectURIParameter: nil, scope: ScopeSet(["profile"]), state: nil, codeChallenge: nil, responseType: .code,
                createdAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(600)))
        #expect(try await store.sessions(userID: "u1").map(\.idHash) == ["s2", "s1"])
        try await store.deleteSessions(userID: "u1")
        #expect(try await store.sessions(userID: "u1").isEmpty)
        #expect(try await store.pendingAuthorization(id: "p1") == nil)
        #expect(try await store.session(idHash: "s3") != nil)
    }

    @Test("Active grants are counted per client", arguments: TestStores.kinds)
    func activeGrantCounts(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertGrant(Self.grant("g1"), tokens: [Self.token("a1", grant: "g1")])
        try await store.insertGrant(Self.grant("g2"), tokens: [Self.token("a2", grant: "g2")])
        try await store.insertGrant(Self.grant("g3"), tokens: [Self.token("a3", grant: "g3")])
        try await store.revokeGrant(id: "g3", at: Self.t0)
        #expect(try await store.activeGrantCounts(at: Self.t0) == ["c1": 2])
        #expect(
            try await store.activeGrantCounts(at: Self.t0.addingTimeInterval(7200)).isEmpty, "expired tokens count for nothing")
    }

    @Test(
        "Audit events: stored, filtered by time, event, user and client, newest first, purged after retention",
        arguments: TestStores.kinds)
    func auditEvents(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        func event(_ id: String, _ offset: TimeInterval, _ name: String, user: String? = nil, client: String? = nil) -> AuditEvent
        {
            AuditEvent(
                id: id, at: Self.t0.addingTimeInterval(offset), event: name, actor: "cli", userID: user, clientID: client,
                details: ["scope": "profile \"quoted\"", "n": "1"])
        }
        try await store.insertAuditEvents([
            event("e1", 0, "login.succeeded", user: "u1"), event("e2", 10, "consent.granted", user: "u1", client: "c1"),
            event("e3", 20, "login.succeeded", user: "u2"), event("e4", 30, "client.registered", client: "c2"),
        ])
        let all = try await store.auditEvents(AuditQuery(since: Self.t0))
        #expect(all.map(\.id) == ["e4", "e3", "e2", "e1"])
        #expect(all.last == event("e1", 0, "login.succeeded", user: "u1"), "every field round-trips")
        #expect(try await store.auditEvents(AuditQuery(since: Self.t0.addingTimeInterval(15))).map(\.id) == ["e4", "e3"])
        #expect(try await store.auditEvents(AuditQuery(since: Self.t0, event: "login.succeeded")).map(\.id) == ["e3", "e1"])
        #expect(try await store.auditEvents(AuditQuery(since: Self.t0, userID: "u1")).map(\.id) == ["e2", "e1"])
        #expect(try await store.auditEvents(AuditQuery(since: Self.t0, clientID: "c2")).map(\.id) == ["e4"])
        #expect(try await store.auditEvents(AuditQuery(since: Self.t0, userID: "u1", clientID: "c1")).map(\.id) == ["e2"])
        #expect(try await store.auditEvents(AuditQuery(since: Self.t0, limit: 1)).map(\.id) == ["e4"])
        // Kept for the activity retention, whatever the token retention.
        _ = try await store.purgeExpired(at: Self.t0.addingTimeInterval(25), retention: 0, activityRetention: 10)
        #expect(try await store.auditEvents(AuditQuery(since: Self.t0)).map(\.id) == ["e4", "e3"])
    }
}
