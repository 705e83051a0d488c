import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyStorePostgres
import LatchkeyTestSupport
import Testing

/// One suite for the `Store` protocol, run unchanged against SQLite and PostgreSQL.
@Suite("Store conformance")
struct StoreConformanceTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func client(_ id: String = "c1", type: ClientType = .native, secret: String? = nil) -> Client {
        Client(
            id: ClientID(rawValue: id), type: type, name: "App \(id)",
            redirectURIs: ["com.example.app:/cb", "http://127.0.0.1/callback"],
            scopes: ScopeSet(["profile", "activity"]), logoURI: "https://a.example/logo.png", consentMarkdown: "**Hi**",
            privacyPolicyURI: nil, secretHash: secret.map(RandomToken.hash), ownerUserID: nil, allowImplicit: type == .browser,
            createdAt: t0)
    }

    static func user(_ id: String = "u1", _ name: String = "alice") -> User {
        User(
            id: UserID(rawValue: id), username: Username(rawValue: name), displayName: nil, passwordHash: "$2b$04$hash",
            createdAt: t0)
    }

    static func token(_ hash: String, kind: TokenKind = .access, grant: String = "g1", issuedWith: String? = nil) -> TokenRecord {
        TokenRecord(
            hash: TokenHash(rawValue: hash), kind: kind, grantID: GrantID(rawValue: grant), clientID: "c1", userID: "u1",
            scope: ScopeSet(["profile"]), createdAt: t0,
            expiresAt: t0.addingTimeInterval(3600), issuedWith: issuedWith.map(TokenHash.init(rawValue:)))
    }

    static func grant(_ id: String = "g1") -> GrantRecord {
        GrantRecord(id: GrantID(rawValue: id), clientID: "c1", userID: "u1", scope: ScopeSet(["profile"]), createdAt: t0)
    }

    static func code(_ hash: String = "code1") -> AuthorizationCodeRecord {
        AuthorizationCodeRecord(
            codeHash: CodeHash(rawValue: hash), clientID: "c1", userID: "u1", redirectURI: "http://127.0.0.1:5000/callback",
            redirectURIParameter: nil, scope: ScopeSet(["profile", "activity"]), codeChallenge: "x", createdAt: t0,
            expiresAt: t0.addingTimeInterval(60))
    }

    @Test("The scope catalogue starts with the defaults and can be changed", arguments: TestStores.kinds)
    func scopes(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        #expect(try await store.scopeCatalogue().map(\.name).contains("profile"))
        try await store.saveScope(ScopeDefinition(name: "notes", description: "Notes"))
        try await store.saveScope(ScopeDefinition(name: "notes", description: "Your notes"))
        #expect(try await store.scopeCatalogue().first { $0.name == "notes" }?.description == "Your notes")
        #expect(try await store.deleteScope(named: "notes"))
        #expect(try await !store.deleteScope(named: "notes"))
    }

    @Test("Users: round trip, unique usernames, password change ends sessions, delete", arguments: TestStores.kinds)
    func users(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        #expect(try await store.user(id: "u1") == Self.user())
        #expect(try await store.user(username: "alice") == Self.user())
        await #expect(throws: StoreError.self) { try await store.insertUser(Self.user("u2", "alice")) }
        try await store.insertSession(
            BrowserSession(
                idHash: "s1", userID: "u1", csrfToken: "x", createdAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(60)))
        #expect(try await store.setPasswordHash(username: "alice", passwordHash: "$2b$04$new"))
        #expect(try await store.user(id: "u1")?.passwordHash == "$2b$04$new")
        #expect(try await store.session(idHash: "s1") == nil)
        #expect(try await store.users().count == 1)
        #expect(try await store.deleteUser(username: "alice"))
        #expect(try await store.user(id: "u1") == nil)
        #expect(try await !store.deleteUser(username: "alice"))
    }

    @Test("Users by e-mail address: without regard to case, every account that has it, oldest first", arguments: TestStores.kinds)
    func usersByEmail(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        var alice = Self.user()
        alice.email = "Alice@Example.org"
        var bob = Self.user("u2", "bob")
        bob.email = "alice@example.org"
        bob.createdAt = Self.t0.addingTimeInterval(60)
        var carol = Self.user("u3", "carol")
        carol.email = "carol@example.org"
        for user in [bob, carol, alice] { try await store.insertUser(user) }
        #expect(try await store.users(email: "ALICE@example.org").map(\.id) == ["u1", "u2"])
        #expect(try await store.users(email: "carol@example.org") == [carol])
        #expect(try await store.users(email: "nobody@example.org").isEmpty)
        #expect(try await store.users(email: "alice@example.org\u{0}").isEmpty)
    }

    @Test("Clients: every field round-trips; secrets rotate for confidential clients only; delete", arguments: TestStores.kinds)
    func clients(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let native = Self.client()
        let web = Self.client("c2", type: .web, secret: "s")
        let spa = Self.client("c3", type: .browser)
        for client in [native, web, spa] { try await store.insertClient(client) }
        #expect(try await store.client(id: "c1") == native)
        #expect(try await store.client(id: "c2") == web)
        #expect(try await store.client(id: "c3")?.allowImplicit == true)
        #expect(try await store.clients().map(\.id.rawValue).sorted() == ["c1", "c2", "c3"])
        await #expect(throws: StoreError.self) { try await store.insertClient(native) }
        #expect(try await store.setClientSecretHash(id: "c2", secretHash: "new"))
        #expect(try await store.client(id: "c2")?.secretHash == "new")
        #expect(try await !store.setClientSecretHash(id: "c1", secretHash: "new"))
        #expect(try await store.deleteClient(id: "c1"))
        #expect(try await store.client(id: "c1") == nil)
    }

    @Test(
        "T35 A key holding NUL or of absurd length matches nothing (SQLite would cut it short, PostgreSQL would refuse it)",
        arguments: TestStores.kinds)
    func nulKeys(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        try await store.insertClient(Self.client())
        let long = String(repeating: "c", count: 2_049)
        #expect(try await store.user(username: "alice\u{0}evil") == nil)
        #expect(try await store.user(id: "u1\u{0}") == nil)
        #expect(try await store.client(id: "c1\u{0}") == nil)
        #expect(try await store.client(id: ClientID(rawValue: long)) == nil)
        #expect(try await store.pendingAuthorization(id: "p1\u{0}") == nil)
        #expect(try await store.takePendingAuthorization(id: "p1\u{0}") == nil)
        #expect(try await store.token(hash: "t1\u{0}") == nil)
        #expect(try await store.session(idHash: "s1\u{0}") == nil)
        #expect(try await !store.deleteClient(id: "c1\u{0}"))
        #expect(try await !store.deleteUser(username: "alice\u{0}"))
        let epoch = try await store.user(id: "u1")?.accessEpoch
        try await store.revokeAuthorization(userID: "u1", clientID: "c1\u{0}", at: Self.t0)
        // Nothing of the operation is done, not even its first step (the user's access epoch).
        #expect(try await store.user(id: "u1")?.accessEpoch == epoch)
        #expect(try await store.client(id: "c1") != nil)
        #expect(try await store.user(username: "alice") != nil)
        // An unusable client id is an unknown client: its failures are the unknown key's.
        _ = try await store.recordFailure(key: "unknown", at: Self.t0, window: 60)
        let (nul, nulWindow) = try await store.clientAndFailures(
            id: "c1\u{0}", knownKey: "known", unknownKey: "unknown", at: Self.t0)
        #expect(nul == nil && nulWindow?.failures == 1)
        #expect(try await store.user(username: Username(rawValue: long)) == nil)
        #expect(try await !store.rotateRefreshToken(hash: "t1\u{0}", successors: [], at: Self.t0))
        #expect(try await store.takePushedRequest(hash: "h\u{0}", clientID: "c1") == nil)
        #expect(try await store.deviceAuthorization(deviceCodeHash: "d\u{0}") == nil)
        #expect(try await store.auditEvents(AuditQuery(since: Self.t0, userID: "u1\u{0}")).isEmpty)
        // A row the server would store under such a key is refused, never stored cut short.
        await #expect(throws: StoreError.self) {
            try await store.insertUser(
                User(id: "u2\u{0}", username: "bob", displayName: nil, passwordHash: "x", createdAt: Self.t0))
        }
        #expect(try await store.user(username: "bob") == nil)
    }

    @Test("A stored value this build does not know is an error, never read as some default", arguments: TestStores.kinds)
    func unknownStoredValue(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        try await store.insertClient(Self.client())
        let database = try #require(store as? any SQLDatabase)
        _ = try await database.execute([.run("UPDATE users SET role = 'owner'")], operation: "test")
        _ = try await database.execute([.run("UPDATE clients SET type = 'satellite'")], operation: "test")
        await #expect(throws: StoreError.self) { try await store.user(username: "alice") }
        await #expect(throws: StoreError.self) { try await store.client(id: "c1") }
    }

    @Test("Sessions: touch records the last use; delete ends the session and its pending requests", arguments: TestStores.kinds)
    func sessionTouchAndDelete(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let session = BrowserSession(
            idHash: "s1", userID: "u1", csrfToken: "x", createdAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(600))
        try await store.insertSession(session)
        #expect(try await store.session(idHash: "s1")?.lastSeenAt == Self.t0)
        try await store.touchSession(
            idHash: "s1", at: Self.t0.addingTimeInterval(90), expiresAt: Self.t0.addingTimeInterval(690))
        #expect(try await store.session(idHash: "s1")?.lastSeenAt == Self.t0.addingTimeInterval(90))
        #expect(try await store.session(idHash: "s1")?.expiresAt == Self.t0.addingTimeInterval(690), "the idle end moves on")
        try await store.insertPendingAuthorization(
            PendingAuthorization(
                id: "p1", sessionIDHash: "s1", clientID: "c1", redirectURI: "com.example.app:/cb", redirectURIParameter: nil,
                scope: ScopeSet(["profile"]), state: nil, codeChallenge: "ch", responseType: .code, createdAt: Self.t0,
                expiresAt: Self.t0.addingTimeInterval(600)))
        try await store.deleteSession(idHash: "s1")
        #expect(try await store.session(idHash: "s1") == nil)
        #expect(try await store.pendingAuthorization(id: "p1") == nil)
    }

    @Test(
        "Throttles: failures count within a window, restart after it, clear, and race without loss", arguments: TestStores.kinds)
    func throttles(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let end = Self.t0.addingTimeInterval(60)
        #expect(try await store.failures(key: "account:a", at: Self.t0) == nil)
        #expect(
            try await store.recordFailure(key: "account:a", at: Self.t0, window: 60) == ThrottleWindow(failures: 1, endsAt: end))
        #expect(
            try await store.recordFailure(key: "account:a", at: Self.t0.addingTimeInterval(30), window: 60)
                == ThrottleWindow(failures: 2, endsAt: end))
        #expect(
            try await store.failures(key: "account:a", at: Self.t0.addingTimeInterval(59))
                == ThrottleWindow(failures: 2, endsAt: end))
        #expect(try await store.failures(key: "account:b", at: Self.t0) == nil)
        // The window has ended: nothing is counted, and the next failure starts a new window.
        #expect(try await store.failures(key: "account:a", at: end) == nil)
        let later = end.addingTimeInterval(5)
        #expect(
            try await store.recordFailure(key: "account:a", at: later, window: 60)
                == ThrottleWindow(failures: 1, endsAt: later.addingTimeInterval(60)))
        try await store.clearFailures(key: "account:a")
        #expect(try await store.failures(key: "account:a", at: later) == nil)

        // A key made of a prefix and the longest client id a metadata document may have is counted.
        let prefixed = ThrottleKey(rawValue: "client:https://app.example/" + String(repeating: "p", count: 1_000))
        #expect(try await store.recordFailure(key: prefixed, at: Self.t0, window: 60).failures == 1)
        #expect(try await store.failures(key: prefixed, at: Self.t0)?.failures == 1)

        // Twenty racing failures (several instances) are all counted.
        try await withThrowingTaskGroup(of: ThrottleWindow.self) { group in
            for _ in 0..<20 { group.addTask { try await store.recordFailure(key: "address:1", at: Self.t0, window: 60) } }
            try await group.waitForAll()
        }
        #expect(try await store.failures(key: "address:1", at: Self.t0)?.failures == 20)
        // Purge removes ended windows only.
        _ = try await store.recordFailure(key: "client:x", at: Self.t0.addingTimeInterval(100), window: 60)
        _ = try await store.purgeExpired(at: Self.t0.addingTimeInterval(120), retention: 600, activityRetention: 86_400)
        #expect(try await store.failures(key: "address:1", at: Self.t0) == nil)
        #expect(try await store.failures(key: "client:x", at: Self.t0.addingTimeInterval(120))?.failures == 1)

        // Client authentication's single read: the client, and the window under the key for a
        // known client or for an unknown id.
        try await store.insertClient(Self.client("c9"))
        _ = try await store.recordFailure(key: "known", at: Self.t0, window: 60)
        _ = try await store.recordFailure(key: "unknown", at: Self.t0, window: 60)
        _ = try await store.recordFailure(key: "unknown", at: Self.t0, window: 60)
        let (known, knownWindow) = try await store.clientAndFailures(
            id: "c9", knownKey: "known", unknownKey: "unknown", at: Self.t0)
        #expect(known == Self.client("c9") && knownWindow == ThrottleWindow(failures: 1, endsAt: end))
        let (none, noneWindow) = try await store.clientAndFailures(
            id: "zz", knownKey: "known", unknownKey: "unknown", at: Self.t0)
        #expect(none == nil && noneWindow?.failures == 2)
        let (_, ended) = try await store.clientAndFailures(id: "c9", knownKey: "known", unknownKey: "unknown", at: end)
        #expect(ended == nil)
    }

    @Test("Sessions and pending requests: replace moves pending requests; take returns once", arguments: TestStores.kinds)
    func sessions(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let old = BrowserSession(
            idHash: "old", userID: nil, csrfToken: "a", createdAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(60))
        try await store.insertSession(old)
        #expect(try await store.session(idHash: "old") == old)
        let pending = PendingAuthorization(
            id: "p1", sessionIDHash: "old", clientID: "c1", redirectURI: "com.example.app:/cb", redirectURIParameter: nil,
            scope: ScopeSet(["profile"]), state: "st", codeChallenge: "ch", responseType: .token, createdAt: Self.t0,
            expiresAt: Self.t0.addingTimeInterval(600))
        try await store.insertPendingAuthorization(pending)
        #expect(try await store.pendingAuthorization(id: "p1") == pending)
        let fresh = BrowserSession(
            idHash: "new", userID: "u1", csrfToken: "b", createdAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(60))
        try await store.replaceSession(oldIDHash: "old", with: fresh)
        #expect(try await store.session(idHash: "old") == nil)
        #expect(try await store.session(idHash: "new") == fresh)
        #expect(try await store.pendingAuthorization(id: "p1")?.sessionIDHash == "new")
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { try await store.takePendingAuthorization(id: "p1") != nil } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(results == 1)
    }

    @Test("Consent is saved and replaced", arguments: TestStores.kinds)
    func consent(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.saveConsent(ConsentRecord(userID: "u1", clientID: "c1", scope: ScopeSet(["profile"]), updatedAt: Self.t0))
        try await store.saveConsent(
            ConsentRecord(userID: "u1", clientID: "c1", scope: ScopeSet(["profile", "sleep"]), updatedAt: Self.t0))
        #expect(try await store.consent(userID: "u1", clientID: "c1")?.scope == ScopeSet(["profile", "sleep"]))
        #expect(try await store.consent(userID: "u1", clientID: "c2") == nil)
    }

    @Test("I1 Of many concurrent redemptions of one code exactly one stores its tokens", arguments: TestStores.kinds)
    func redeemOnce(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        try await store.insertAuthorizationCode(Self.code())
        #expect(try await store.authorizationCode(hash: "code1") == Self.code())
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<12 {
                group.addTask {
                    try await store.redeemAuthorizationCode(
                        codeHash: "code1", grant: Self.grant("g\(index)"), tokens: [Self.token("at\(index)", grant: "g\(index)")],
                        at: Self.t0)
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(winners == 1)
        let record = try #require(try await store.authorizationCode(hash: "code1"))
        #expect(record.consumedAt == Self.t0)
        var stored = 0
        for index in 0..<12 where try await store.token(hash: TokenHash(rawValue: "at\(index)")) != nil { stored += 1 }
        #expect(stored == 1, "losers stored nothing")
        #expect(
            try await store.token(hash: TokenHash(rawValue: "at" + String(record.grantID!.rawValue.dropFirst())))?.grantID
                == record.grantID)
    }

    @Test(
        "Concurrent writes (one SQLite transaction per batch): a failing one rolls back alone, the rest commit",
        arguments: TestStores.kinds)
    func concurrentWritesFailAlone(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            for index in 0..<48 {
                group.addTask {
                    // Every third write repeats a token hash inside itself: its second insert fails.
                    let second = index % 3 == 0 ? "t\(index)a" : "t\(index)b"
                    do {
                        try await store.insertGrant(
                            Self.grant("g\(index)"),
                            tokens: [Self.token("t\(index)a", grant: "g\(index)"), Self.token(second, grant: "g\(index)")])
                        return (index, true)
                    } catch StoreError.conflict {
                        return (index, false)
                    }
                }
            }
            return try await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
        }
        for index in 0..<48 {
            let fails = index % 3 == 0
            #expect(outcomes[index] == !fails, "write \(index)")
            // The failed write left nothing behind: not its grant's first token either.
            #expect((try await store.token(hash: TokenHash(rawValue: "t\(index)a")) != nil) == !fails, "write \(index)")
            #expect((try await store.token(hash: TokenHash(rawValue: "t\(index)b")) != nil) == !fails, "write \(index)")
        }
    }

    @Test("I2 A refresh token rotates once, even under concurrency; grace reissue and revocation", arguments: TestStores.kinds)
    func rotation(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        try await store.insertGrant(
            Self.grant(), tokens: [Self.token("rt0", kind: .refresh), Self.token("at0", issuedWith: "rt0")])
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<12 {
                group.addTask {
                    try await store.rotateRefreshToken(
                        hash: "rt0",
                        successors: [
                            Self.token("rt1-\(index)", kind: .refresh), Self.token("at1-\(index)", issuedWith: "rt1-\(index)"),
                        ],
                        at: Self.t0)
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(winners == 1)
        let rotated = try #require(try await store.token(hash: "rt0"))
        let successor = try #require(rotated.successorHash)
        #expect(rotated.rotatedAt == Self.t0)

        // Grace: the unused successor is retired with its access token, and the original points at the new one.
        let suffix = successor.rawValue.replacingOccurrences(of: "rt1-", with: "")
        #expect(
            try await store.reissueWithinGrace(
                originalHash: "rt0", retiredHash: successor,
                successors: [Self.token("rt2", kind: .refresh), Self.token("at2", issuedWith: "rt2")],
                at: Self.t0))
        #expect(try await store.token(hash: TokenHash(rawValue: "at1-\(suffix)"))?.revokedAt != nil)
        #expect(try await store.token(hash: successor)?.successorHash == nil)
        #expect(try await store.token(hash: successor)?.rotatedAt != nil)
        #expect(try await store.token(hash: "rt0")?.successorHash == "rt2")
        #expect(
            try await !store.reissueWithinGrace(
                originalHash: "rt0", retiredHash: successor, successors: [], at: Self.t0))

        #expect(try await store.activeGrants(userID: "u1", at: Self.t0).map(\.id) == ["g1"])
        try await store.revokeToken(hash: "at2", at: Self.t0)
        #expect(try await store.token(hash: "at2")?.revokedAt == Self.t0)
        try await store.revokeGrant(id: "g1", at: Self.t0)
        #expect(try await store.token(hash: "rt2")?.revokedAt == Self.t0)
        #expect(try await store.activeGrants(userID: "u1", at: Self.t0).isEmpty)
        #expect(try await !store.rotateRefreshToken(hash: "rt2", successors: [], at: Self.t0), "a revoked token does not rotate")
    }

    @Test(
        "T44 Grace reissues racing the grant's revocation (reuse found by a third request) all finish, and nothing lives on",
        arguments: TestStores.kinds)
    func graceRacingRevocation(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        for trial in 0..<40 {
            let grant = GrantID(rawValue: "g\(trial)")
            func token(_ name: String, _ kind: TokenKind = .access, issuedWith: String? = nil) -> TokenRecord {
                Self.token("\(name)-\(trial)", kind: kind, grant: grant.rawValue, issuedWith: issuedWith.map { "\($0)-\(trial)" })
            }
            try await store.insertGrant(
                GrantRecord(id: grant, clientID: "c1", userID: "u1", scope: ScopeSet(["profile"]), createdAt: Self.t0),
                tokens: [token("rt0", .refresh), token("at0", issuedWith: "rt0")])
            #expect(
                try await store.rotateRefreshToken(
                    hash: TokenHash(rawValue: "rt0-\(trial)"),
                    successors: [token("rt1", .refresh), token("at1", issuedWith: "rt1")], at: Self.t0))
            // Each lost response is reissued while a request that found reuse revokes the grant.
            let reissued = try await withThrowingTaskGroup(of: Bool.self) { group in
                for reissue in 0..<3 {
                    group.addTask {
                        try await store.reissueWithinGrace(
                            originalHash: TokenHash(rawValue: "rt0-\(trial)"), retiredHash: TokenHash(rawValue: "rt1-\(trial)"),
                            successors: [
                                token("rt2.\(reissue)", .refresh), token("at2.\(reissue)", issuedWith: "rt2.\(reissue)"),
                            ],
                            at: Self.t0)
                    }
                }
                group.addTask {
                    try await store.revokeGrant(id: grant, at: Self.t0)
                    return false
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(reissued <= 1, "one unused successor, retired once")
            let names = ["rt0", "at0", "rt1", "at1"] + (0..<3).flatMap { ["rt2.\($0)", "at2.\($0)"] }
            for name in names {
                let stored = try await store.token(hash: TokenHash(rawValue: "\(name)-\(trial)"))
                #expect(stored.map { $0.revokedAt != nil } ?? true, "\(name)-\(trial) outlives its grant's revocation")
            }
        }
        // Taking the grant's row first is what keeps the two from deadlocking: none was run again.
        #expect((store as? PostgresStore)?.transactionsRunAgain ?? 0 == 0)
    }

    @Test(
        "Revoking an authorization ends every grant of the user for the client and forgets consent", arguments: TestStores.kinds)
    func revokeAuthorization(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertGrant(Self.grant("g1"), tokens: [Self.token("a1", grant: "g1")])
        try await store.insertGrant(Self.grant("g2"), tokens: [Self.token("a2", grant: "g2")])
        try await store.saveConsent(ConsentRecord(userID: "u1", clientID: "c1", scope: ScopeSet(["profile"]), updatedAt: Self.t0))
        try await store.revokeAuthorization(userID: "u1", clientID: "c1", at: Self.t0)
        #expect(try await store.token(hash: "a1")?.revokedAt != nil)
        #expect(try await store.token(hash: "a2")?.revokedAt != nil)
        #expect(try await store.consent(userID: "u1", clientID: "c1") == nil)
    }

    @Test("Purging removes expired rows in batches and keeps live ones", arguments: TestStores.kinds)
    func purge(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        var tokens: [TokenRecord] = []
        for index in 0..<1_200 { tokens.append(Self.token("old\(index)")) }
        var live = Self.token("live")
        live.expiresAt = Self.t0.addingTimeInterval(100_000)
        try await store.insertGrant(Self.grant(), tokens: tokens + [live])
        try await store.insertAuthorizationCode(Self.code())
        let purged = try await store.purgeExpired(
            at: Self.t0.addingTimeInterval(7_200), retention: 600, activityRetention: 86_400)
        #expect(purged == 1_201)
        #expect(try await store.token(hash: "live") != nil)
        #expect(try await store.token(hash: "old5") == nil)
    }
}
