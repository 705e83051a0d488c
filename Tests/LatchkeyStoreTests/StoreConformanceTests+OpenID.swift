import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The operations and fields OpenID Connect added, on both stores.
extension StoreConformanceTests {
    @Test(
        "OpenID fields round-trip: user claims, client ID-token settings, the request's nonce and sign-in demand, auth_time",
        arguments: TestStores.kinds)
    func openIDFields(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        #expect(
            try await store.setUserProfile(
                id: "u1", displayName: "Alice", email: "a@example.com", emailVerified: true, at: Self.t0))
        let user = try #require(try await store.user(id: "u1"))
        #expect(user.email == "a@example.com" && user.emailVerified && user.updatedAt == Self.t0 && user.displayName == "Alice")
        #expect(try await !store.setUserProfile(id: "nobody", displayName: nil, email: nil, emailVerified: false, at: Self.t0))

        var client = Self.client()
        client.idTokenSigningAlgorithm = .es256
        client.postLogoutRedirectURIs = ["https://a.example/bye", "https://a.example/bye2"]
        try await store.insertClient(client)
        #expect(try await store.client(id: "c1") == client)
        client.postLogoutRedirectURIs = []
        client.idTokenSigningAlgorithm = .rs256
        #expect(try await store.updateClient(client))
        #expect(try await store.client(id: "c1") == client)

        let pending = PendingAuthorization(
            id: "p1", sessionIDHash: "s1", clientID: "c1", redirectURI: "http://127.0.0.1/cb", redirectURIParameter: nil,
            scope: ScopeSet(["openid"]), state: "st", codeChallenge: "x", nonce: "n-1",
            authenticatedAfter: Self.t0.addingTimeInterval(-60), promptConsent: true,
            dpopJKT: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I", createdAt: Self.t0,
            expiresAt: Self.t0.addingTimeInterval(600))
        try await store.insertPendingAuthorization(pending)
        #expect(try await store.pendingAuthorization(id: "p1") == pending)

        var code = Self.code()
        code.nonce = "n-1"
        code.authTime = Self.t0.addingTimeInterval(-5)
        code.dpopJKT = pending.dpopJKT
        try await store.insertAuthorizationCode(code)
        #expect(try await store.authorizationCode(hash: "code1") == code)
        // The way the authorization endpoint stores a code (PostgreSQL's own statement) keeps it too.
        var bound = Self.code("code2")
        bound.dpopJKT = pending.dpopJKT
        #expect(try await store.insertAuthorizationCode(bound, whileAccessEpoch: 0))
        #expect(try await store.authorizationCode(hash: "code2") == bound)

        var grant = Self.grant()
        grant.authTime = Self.t0.addingTimeInterval(-5)
        #expect(
            try await store.redeemAuthorizationCode(codeHash: "code1", grant: grant, tokens: [Self.token("a1")], at: Self.t0))
        #expect(try await store.grant(id: "g1") == grant)
        #expect(try await store.grant(id: "nope") == nil)
    }

    @Test(
        "Signing keys: a new key retires the previous one of its algorithm only; published_until hides and purges it",
        arguments: TestStores.kinds)
    func signingKeys(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        func key(_ kid: String, _ algorithm: SigningAlgorithm, at offset: TimeInterval) -> SigningKeyRecord {
            SigningKeyRecord(
                kid: kid, algorithm: algorithm, publicJWK: #"{"kid":"\#(kid)"}"#, sealedPrivateKey: "sealed-\(kid)",
                createdAt: Self.t0.addingTimeInterval(offset), activatesAt: Self.t0.addingTimeInterval(offset + 10))
        }
        let until = Self.t0.addingTimeInterval(1_000)
        try await store.insertSigningKey(key("r1", .rs256, at: 0), retiredKeysPublishedUntil: until)
        try await store.insertSigningKey(key("e1", .es256, at: 1), retiredKeysPublishedUntil: until)
        try await store.insertSigningKey(key("r2", .rs256, at: 2), retiredKeysPublishedUntil: until)
        let keys = try await store.signingKeys(at: Self.t0)
        #expect(keys.map(\.kid) == ["r1", "e1", "r2"])
        #expect(keys.first { $0.kid == "r1" }?.publishedUntil == until)
        #expect(keys.first { $0.kid == "e1" }?.publishedUntil == nil, "another algorithm's key is not retired")
        #expect(keys.first { $0.kid == "r2" } == key("r2", .rs256, at: 2))

        let later = until.addingTimeInterval(1)
        #expect(try await store.signingKeys(at: later).map(\.kid) == ["e1", "r2"])
        _ = try await store.purgeExpired(at: later, retention: 600, activityRetention: 86_400)
        #expect(try await store.signingKeys(at: Self.t0).map(\.kid) == ["e1", "r2"], "the purge removed the retired key")
    }
}
