import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Device authorization requests (RFC 8628) on both stores.
extension StoreConformanceTests {
    static func deviceAuthorization(_ letter: Character = "a") -> DeviceAuthorization {
        DeviceAuthorization(
            deviceCodeHash: String(repeating: letter, count: 64),
            userCodeHash: String(repeating: "u", count: 63) + String(letter),
            clientID: "c1", scope: ScopeSet(["profile", "sleep"]), resources: ResourceSet(["https://api.example/"]),
            interval: 5, createdAt: t0, expiresAt: t0.addingTimeInterval(600))
    }

    @Test("Device requests: claimed once while live, settled once, polls recorded, purged", arguments: TestStores.kinds)
    func deviceAuthorizations(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let device = Self.deviceAuthorization()
        try await store.insertDeviceAuthorization(device)
        #expect(try await store.deviceAuthorization(deviceCodeHash: device.deviceCodeHash) == device)
        // A second request with the same user code is refused: the caller draws another.
        var twin = Self.deviceAuthorization("b")
        twin.userCodeHash = device.userCodeHash
        await #expect(throws: StoreError.self) { try await store.insertDeviceAuthorization(twin) }

        // Not settled before it is claimed; claimed by one session (again by it, never by another); not after expiry.
        let mine = SessionIDHash(rawValue: String(repeating: "1", count: 64))
        let theirs = SessionIDHash(rawValue: String(repeating: "2", count: 64))
        #expect(try await store.settleDeviceAuthorization(deviceCodeHash: device.deviceCodeHash, status: .approved) == false)
        let claimed = try await store.claimDeviceAuthorization(userCodeHash: device.userCodeHash, by: mine, at: Self.t0)
        #expect(claimed?.status == .claimed)
        #expect(claimed?.resources == device.resources)
        #expect(try await store.claimDeviceAuthorization(userCodeHash: device.userCodeHash, by: theirs, at: Self.t0) == nil)
        #expect(try await store.claimDeviceAuthorization(userCodeHash: device.userCodeHash, by: mine, at: Self.t0) != nil)
        #expect(try await store.settleDeviceAuthorization(deviceCodeHash: device.deviceCodeHash, status: .denied))
        #expect(try await store.settleDeviceAuthorization(deviceCodeHash: device.deviceCodeHash, status: .approved) == false)
        #expect(try await store.claimDeviceAuthorization(userCodeHash: device.userCodeHash, by: mine, at: Self.t0) == nil)
        #expect(try await store.deviceAuthorization(deviceCodeHash: device.deviceCodeHash)?.status == .denied)

        try await store.recordDevicePoll(deviceCodeHash: device.deviceCodeHash, at: Self.t0.addingTimeInterval(7), interval: 10)
        let polled = try await store.deviceAuthorization(deviceCodeHash: device.deviceCodeHash)
        #expect(polled?.interval == 10)
        #expect(polled?.lastPolledAt == Self.t0.addingTimeInterval(7))

        let late = Self.deviceAuthorization("c")
        try await store.insertDeviceAuthorization(late)
        #expect(try await store.claimDeviceAuthorization(userCodeHash: late.userCodeHash, by: mine, at: late.expiresAt) == nil)
        _ = try await store.purgeExpired(at: Self.t0.addingTimeInterval(601), retention: 0, activityRetention: 86_400)
        #expect(try await store.deviceAuthorization(deviceCodeHash: late.deviceCodeHash) == nil)
    }

    @Test("A pending request keeps its device code hash; a client's allow_device_code is stored", arguments: TestStores.kinds)
    func deviceColumns(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        var client = Self.client()
        client.allowDeviceCode = true
        try await store.insertClient(client)
        #expect(try await store.client(id: client.id)?.allowDeviceCode == true)
        client.allowDeviceCode = false
        #expect(try await store.updateClient(client))
        #expect(try await store.clients().first?.allowDeviceCode == false)

        let pending = PendingAuthorization(
            id: "p1", sessionIDHash: SessionIDHash(rawValue: String(repeating: "s", count: 64)), clientID: "c1",
            redirectURI: "http://latchkey.test/device", redirectURIParameter: nil, scope: ScopeSet(["profile"]), state: nil,
            codeChallenge: nil, promptConsent: true, deviceCodeHash: String(repeating: "d", count: 64), createdAt: Self.t0,
            expiresAt: Self.t0.addingTimeInterval(600))
        try await store.insertPendingAuthorization(pending)
        #expect(try await store.pendingAuthorization(id: "p1") == pending)
        #expect(try await store.takePendingAuthorization(id: "p1")?.deviceCodeHash == pending.deviceCodeHash)
    }
}
