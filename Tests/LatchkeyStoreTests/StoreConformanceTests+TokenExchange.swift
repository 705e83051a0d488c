import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Token exchange (RFC 8693) on both stores: a grant's `act` claim is stored and read with its tokens.
extension StoreConformanceTests {
    @Test("A grant's actor is stored and read with each of its tokens", arguments: TestStores.kinds)
    func grantActor(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let act = #"{"sub":"svc","client_id":"svc","act":{"sub":"u1","client_id":"app"}}"#
        let grant = GrantRecord(
            id: "g-exchanged", clientID: "c1", userID: nil, scope: ScopeSet(["profile"]), createdAt: Self.t0, actor: act)
        let token = TokenRecord(
            hash: TokenHash(rawValue: String(repeating: "e", count: 64)), kind: .access, grantID: grant.id, clientID: "c1",
            userID: nil, scope: ScopeSet(["profile"]), createdAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(60))
        try await store.insertGrant(grant, tokens: [token])
        #expect(try await store.token(hash: token.hash)?.grantActor == act)
        #expect(try await store.grant(id: grant.id)?.actor == act)
    }
}
