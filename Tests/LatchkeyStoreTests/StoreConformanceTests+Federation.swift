import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Upstream identity providers on both stores: a round trip is taken once, by its browser and
/// provider only; an upstream account links to one account however many sign-ins race; deleting
/// or disabling a provider ends the sessions signed in through it, and deleting a user its links.
extension StoreConformanceTests {
    static func provider(_ name: String = "corp", enabled: Bool = true) -> IdentityProvider {
        var claims = ClaimMapping()
        claims.subject = "id"
        return IdentityProvider(
            name: name, displayName: "Corp", kind: .oauth2, issuer: "https://idp.example", clientID: "latchkey",
            sealedClientSecret: "sealed", scope: ScopeSet(["read:user"]),
            authorizationEndpoint: "https://idp.example/authorize", tokenEndpoint: "https://idp.example/token",
            userinfoEndpoint: "https://idp.example/user", claims: claims, createsAccounts: false,
            allowedEmailDomains: ["example.com", "example.org"], linksVerifiedEmail: true, updatesProfile: true,
            enabled: enabled, createdAt: t0)
    }

    static func round(_ state: String, session: String = "s1", provider: String = "corp") -> FederationRequest {
        FederationRequest(
            stateHash: FederationStateHash(rawValue: state), sessionIDHash: SessionIDHash(rawValue: session),
            provider: provider, nonce: "n", sealedCodeVerifier: "sealed-verifier", pendingID: "p1", next: nil,
            linkingUserID: "u1", expiresAt: t0.addingTimeInterval(600))
    }

    @Test("Providers are stored whole; a name is taken once", arguments: TestStores.kinds)
    func providersRoundTrip(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertIdentityProvider(Self.provider())
        #expect(try await store.identityProvider(name: "corp") == Self.provider())
        await #expect(throws: StoreError.self) { try await store.insertIdentityProvider(Self.provider()) }
        #expect(try await store.setIdentityProviderEnabled(name: "corp", false))
        #expect(try await store.identityProviders().map(\.enabled) == [false])
        #expect(try await !store.setIdentityProviderEnabled(name: "nobody", false))
        #expect(try await store.setIdentityProviderAcceptsAssertions(name: "corp", true))
        #expect(try await store.identityProvider(name: "corp")?.acceptsAssertions == true)
        #expect(try await !store.setIdentityProviderAcceptsAssertions(name: "nobody", true))
        #expect(try await store.deleteIdentityProvider(name: "corp"))
        #expect(try await !store.deleteIdentityProvider(name: "corp"))
        #expect(try await store.identityProviders().isEmpty)
    }

    @Test(
        "FD1 FD2 A round trip is taken once, of many callbacks at once, and only by its browser and provider",
        arguments: TestStores.kinds)
    func roundTripsWorkOnce(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertFederationRequest(Self.round("h1"))
        #expect(try await store.takeFederationRequest(stateHash: "h1", sessionIDHash: "s2", provider: "corp", at: Self.t0) == nil)
        #expect(
            try await store.takeFederationRequest(stateHash: "h1", sessionIDHash: "s1", provider: "other", at: Self.t0) == nil)
        #expect(
            try await store.takeFederationRequest(
                stateHash: "h1", sessionIDHash: "s1", provider: "corp", at: Self.t0.addingTimeInterval(601)) == nil)
        let taken = try await withThrowingTaskGroup(of: FederationRequest?.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await store.takeFederationRequest(stateHash: "h1", sessionIDHash: "s1", provider: "corp", at: Self.t0)
                }
            }
            return try await group.reduce(into: [FederationRequest]()) { if let taken = $1 { $0.append(taken) } }
        }
        #expect(taken == [Self.round("h1")])
    }

    @Test("FD4 An upstream account links to one account, however many first sign-ins race", arguments: TestStores.kinds)
    func linksAreMadeOnce(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertIdentityProvider(Self.provider())
        for n in 1...8 { try await store.insertUser(Self.user("u\(n)", "user\(n)")) }
        let linked = try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in 1...8 {
                group.addTask {
                    try await store.insertFederatedIdentity(
                        FederatedIdentity(
                            provider: "corp", subject: "42", userID: UserID(rawValue: "u\(n)"), email: nil, createdAt: Self.t0))
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(linked.filter { $0 }.count == 1)
        let created = try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in 1...8 {
                group.addTask {
                    let user = Self.user("new\(n)", "new\(n)")
                    return try await store.insertFederatedUser(
                        user,
                        identity: FederatedIdentity(
                            provider: "corp", subject: "43", userID: user.id, email: "a@example.com", createdAt: Self.t0))
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(created.filter { $0 }.count == 1)
        let owner = try #require(try await store.federatedIdentity(provider: "corp", subject: "43")).userID
        #expect(try await store.users().filter { $0.username.rawValue.hasPrefix("new") }.map(\.id) == [owner])
        #expect(try await store.federatedIdentities(userID: owner).map(\.email) == ["a@example.com"])
        try await store.touchFederatedIdentity(provider: "corp", subject: "43", at: Self.t0.addingTimeInterval(5))
        #expect(try await store.federatedIdentity(provider: "corp", subject: "43")?.lastUsedAt == Self.t0.addingTimeInterval(5))
        #expect(try await !store.deleteFederatedIdentity(provider: "corp", userID: "u9"))
        #expect(try await store.deleteUser(username: try #require(try await store.user(id: owner)).username))
        #expect(try await store.federatedIdentity(provider: "corp", subject: "43") == nil)
    }

    @Test(
        "FD7 Disabling or deleting a provider ends the sessions signed in through it, and only those", arguments: TestStores.kinds
    )
    func providerSessionsEnd(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        for name in ["corp", "corp2"] { try await store.insertIdentityProvider(Self.provider(name)) }
        func session(_ id: String, _ amr: AuthenticationMethods) -> BrowserSession {
            BrowserSession(
                idHash: SessionIDHash(rawValue: id), userID: "u1", csrfToken: "x", createdAt: Self.t0,
                expiresAt: Self.t0.addingTimeInterval(600), amr: amr)
        }
        let sessions = [
            session("a", .federated(through: "corp")), session("b", .federated(through: "corp").adding(secondFactor: "otp")),
            session("c", .federated(through: "corp2")), session("d", .password),
        ]
        for one in sessions { try await store.insertSession(one) }
        #expect(try await store.session(idHash: "b")?.amr == .federated(through: "corp").adding(secondFactor: "otp"))
        #expect(try await store.setIdentityProviderEnabled(name: "corp", false))
        #expect(try await store.session(idHash: "a") == nil)
        #expect(try await store.session(idHash: "b") == nil)
        #expect(try await store.session(idHash: "c") != nil)
        #expect(try await store.session(idHash: "d") != nil)
        #expect(try await store.deleteIdentityProvider(name: "corp2"))
        #expect(try await store.session(idHash: "c") == nil)
        #expect(try await store.session(idHash: "d") != nil)
    }
}
