import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Resource indicators (RFC 8707) on both stores: the registered resources, and the resources a
/// request, code, grant, consent and token carry.
extension StoreConformanceTests {
    @Test("Resources: insert, look up by URI, list, conflict, delete", arguments: TestStores.kinds)
    func resources(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let api = ProtectedResource(
            uri: "https://api.example/v1", name: "API", scopes: ScopeSet(["activity", "sleep"]), createdAt: Self.t0)
        let mcp = ProtectedResource(
            uri: "https://mcp.example/mcp", name: "MCP", scopes: ScopeSet(["sleep"]), tokenFormat: .jwt,
            accessTokenLifetime: 120, createdAt: Self.t0)
        try await store.insertResource(api)
        try await store.insertResource(mcp)
        await #expect(throws: StoreError.self) { try await store.insertResource(api) }
        #expect(try await store.resources() == [api, mcp])
        #expect(try await store.resources(uris: ResourceSet([mcp.uri, "https://unknown.example/"])) == [mcp])
        #expect(try await store.resources(uris: ResourceSet([mcp.uri, api.uri])) == [api, mcp])
        #expect(try await store.deleteResource(uri: api.uri))
        #expect(try await !store.deleteResource(uri: api.uri))
        #expect(try await store.resources() == [mcp])
    }

    @Test("The resources of a request travel to its code, grant, tokens and remembered consent", arguments: TestStores.kinds)
    func resourcesTravel(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        try await store.insertClient(Self.client())
        let both = ResourceSet(["https://b.example/", "https://a.example/"])
        let pending = PendingAuthorization(
            id: "p1", sessionIDHash: "s1", clientID: "c1", redirectURI: "http://127.0.0.1/cb", redirectURIParameter: nil,
            scope: ScopeSet(["sleep"]), state: nil, codeChallenge: "x", resources: both, createdAt: Self.t0,
            expiresAt: Self.t0.addingTimeInterval(600))
        try await store.insertPendingAuthorization(pending)
        #expect(try await store.pendingAuthorization(id: "p1")?.resources == both)

        var code = Self.code()
        code.resources = both
        try await store.insertAuthorizationCode(code)
        #expect(try await store.authorizationCode(hash: "code1")?.resources == both)

        var grant = Self.grant()
        grant.resources = both
        var access = Self.token("a1")
        access.audience = ResourceSet(["https://a.example/"])
        var refresh = Self.token("r1", kind: .refresh)
        refresh.audience = both
        #expect(try await store.redeemAuthorizationCode(codeHash: "code1", grant: grant, tokens: [access, refresh], at: Self.t0))
        #expect(try await store.grant(id: "g1")?.resources == both)
        #expect(try await store.token(hash: "a1")?.audience == ResourceSet(["https://a.example/"]))
        #expect(try await store.token(hash: "r1")?.audience == both)
        #expect(try await store.token(hash: "a1")?.audience.description == "https://a.example/")

        let byResource = ["https://a.example/": ScopeSet(["sleep"]), "https://b.example/": ScopeSet(["sleep", "activity"])]
        try await store.saveConsent(
            ConsentRecord(
                userID: "u1", clientID: "c1", scope: ScopeSet(["sleep"]), scopesByResource: byResource, updatedAt: Self.t0))
        let consent = try #require(try await store.consent(userID: "u1", clientID: "c1"))
        #expect(consent.scopesByResource == byResource)
        #expect(consent.covers(ScopeSet(["activity"]), for: ResourceSet(["https://b.example/"])))
        #expect(!consent.covers(ScopeSet(["activity"]), for: both))
    }
}
