import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Client assertions (RFC 7523) on both stores: a used assertion is recorded once, also when many
/// arrive at once, and a client's keys are stored and read back.
extension StoreConformanceTests {
    @Test(
        "An assertion is recorded once, of eight at once one wins, and it is purged after it expires", arguments: TestStores.kinds
    )
    func assertionsAreUsedOnce(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let hash = String(repeating: "a", count: 64)
        let recorded = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask { try await store.recordAssertion(hash: hash, expiresAt: Self.t0.addingTimeInterval(120)) }
            }
            return try await group.reduce(into: 0) { count, fresh in count += fresh ? 1 : 0 }
        }
        #expect(recorded == 1)
        #expect(try await store.recordAssertion(hash: hash, expiresAt: Self.t0.addingTimeInterval(120)) == false)
        _ = try await store.purgeExpired(at: Self.t0.addingTimeInterval(121), retention: 0, activityRetention: 86_400)
        #expect(try await store.recordAssertion(hash: hash, expiresAt: Self.t0.addingTimeInterval(300)))
    }

    @Test("A client's jwks or jwks_uri is stored, replaced and read back", arguments: TestStores.kinds)
    func clientKeys(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        var client = Client(
            id: "keyed", type: .service, name: "Keyed", redirectURIs: [], scopes: ScopeSet(["read"]),
            keys: .jwksURI("https://keys.example/jwks.json"), createdAt: Self.t0)
        try await store.insertClient(client)
        #expect(try await store.client(id: "keyed")?.keys == .jwksURI("https://keys.example/jwks.json"))
        #expect(try await store.client(id: "keyed")?.tokenEndpointAuthMethod == "private_key_jwt")
        client.keys = .jwks(#"{"keys":[]}"#)
        #expect(try await store.updateClient(client))
        #expect(try await store.client(id: "keyed") == client)
        let (found, _) = try await store.clientAndFailures(
            id: "keyed", knownKey: "client:keyed", unknownKey: "client?0", at: Self.t0)
        #expect(found == client)
    }
}
