import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// DPoP (RFC 9449) on both stores: proofs remembered once, nonces while good, tokens' key thumbprints.
extension StoreConformanceTests {
    @Test("DPoP: a proof is recorded once; nonces are good until they expire; both are purged", arguments: TestStores.kinds)
    func dpop(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let proof = String(repeating: "p", count: 64)
        #expect(try await store.recordDPoPProof(hash: proof, expiresAt: Self.t0.addingTimeInterval(180)))
        #expect(try await store.recordDPoPProof(hash: proof, expiresAt: Self.t0.addingTimeInterval(180)) == false)

        let nonce = String(repeating: "n", count: 64)
        #expect(try await store.isLiveDPoPNonce(hash: nonce, at: Self.t0) == false)
        try await store.insertDPoPNonce(hash: nonce, expiresAt: Self.t0.addingTimeInterval(600))
        try await store.insertDPoPNonce(hash: nonce, expiresAt: Self.t0.addingTimeInterval(600))
        #expect(try await store.isLiveDPoPNonce(hash: nonce, at: Self.t0.addingTimeInterval(599)))
        #expect(try await store.isLiveDPoPNonce(hash: nonce, at: Self.t0.addingTimeInterval(600)) == false)

        _ = try await store.purgeExpired(at: Self.t0.addingTimeInterval(601), retention: 0, activityRetention: 86_400)
        #expect(try await store.isLiveDPoPNonce(hash: nonce, at: Self.t0) == false)
        // Purged once expired: the same hash may be recorded again (a proof that old is refused by its iat anyway).
        #expect(try await store.recordDPoPProof(hash: proof, expiresAt: Self.t0.addingTimeInterval(900)))
    }

    @Test("A token's DPoP key thumbprint is stored and read back", arguments: TestStores.kinds)
    func tokenKeyThumbprint(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let grant = GrantRecord(id: "g-dpop", clientID: "c1", userID: nil, scope: ScopeSet(["profile"]), createdAt: Self.t0)
        let bound = TokenRecord(
            hash: TokenHash(rawValue: String(repeating: "b", count: 64)), kind: .access, grantID: grant.id, clientID: "c1",
            userID: nil, scope: ScopeSet(["profile"]), createdAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(60),
            keyThumbprint: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
        var plain = bound
        plain.hash = TokenHash(rawValue: String(repeating: "c", count: 64))
        plain.keyThumbprint = nil
        try await store.insertGrant(grant, tokens: [bound, plain])
        #expect(try await store.token(hash: bound.hash)?.keyThumbprint == bound.keyThumbprint)
        #expect(try await store.token(hash: plain.hash) == plain)
    }
}
