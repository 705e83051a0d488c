import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Pushed authorization requests (RFC 9126) on both stores.
extension StoreConformanceTests {
    @Test("Pushed requests: taken once, only by the client that pushed them, and purged", arguments: TestStores.kinds)
    func pushedRequests(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let hash = String(repeating: "a", count: 64)
        let pushed = PushedAuthorizationRequest(
            requestURIHash: hash, clientID: "c1", parameters: "response_type=code&client_id=c1&scope=profile+sleep",
            expiresAt: Self.t0.addingTimeInterval(60))
        try await store.insertPushedRequest(pushed)
        await #expect(throws: StoreError.self) { try await store.insertPushedRequest(pushed) }
        #expect(try await store.takePushedRequest(hash: hash, clientID: "c2") == nil)
        #expect(try await store.takePushedRequest(hash: hash, clientID: "c1") == pushed)
        #expect(try await store.takePushedRequest(hash: hash, clientID: "c1") == nil)

        var old = pushed
        old.requestURIHash = String(repeating: "b", count: 64)
        try await store.insertPushedRequest(old)
        _ = try await store.purgeExpired(at: Self.t0.addingTimeInterval(61), retention: 0, activityRetention: 86_400)
        #expect(try await store.takePushedRequest(hash: old.requestURIHash, clientID: "c1") == nil)
    }

    @Test("A client's require_pushed_authorization_requests is stored and updated", arguments: TestStores.kinds)
    func clientRequiresPush(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        var client = Self.client()
        client.requirePushedAuthorizationRequests = true
        try await store.insertClient(client)
        #expect(try await store.client(id: client.id)?.requirePushedAuthorizationRequests == true)
        client.requirePushedAuthorizationRequests = false
        #expect(try await store.updateClient(client))
        #expect(try await store.client(id: client.id)?.requirePushedAuthorizationRequests == false)
        #expect(try await store.clients().first?.requirePushedAuthorizationRequests == false)
    }
}
