import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// What a revocation reaches, on both stores (docs/threat-model.md RV1–RV3): a token's life
/// follows its grant and its user, whatever its own row says, and ending a user's access takes
/// the outstanding codes and approved device requests with it.
extension StoreConformanceTests {
    /// A store with user u1, and grant g1 holding refresh token rt0 and access token at0.
    static func storeWithGrant(_ kind: StoreKind) async throws -> any Store {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        try await store.insertGrant(
            Self.grant(), tokens: [Self.token("rt0", kind: .refresh), Self.token("at0", issuedWith: "rt0")])
        return store
    }

    @Test("RV1 A token written into a revoked grant is dead, and its refresh token does not rotate", arguments: TestStores.kinds)
    func tokenOfRevokedGrant(kind: StoreKind) async throws {
        let store = try await Self.storeWithGrant(kind)
        #expect(try await store.token(hash: "at0")?.isActive(at: Self.t0) == true)
        try await store.revokeGrant(id: "g1", at: Self.t0)
        // What a refresh racing the revocation could have written after it: rows of their own
        // that the revocation never saw.
        try await store.insertGrant(
            Self.grant("g0"), tokens: [Self.token("late-rt", kind: .refresh, grant: "g1"), Self.token("late-at", grant: "g1")])
        let late = try #require(try await store.token(hash: "late-at"))
        #expect(late.revokedAt == nil && late.grantEnded && !late.isActive(at: Self.t0))
        #expect(try await store.token(hash: "late-rt")?.grantEnded == true)
        #expect(
            try await !store.rotateRefreshToken(
                hash: "late-rt", successors: [Self.token("rt9", kind: .refresh, grant: "g1")], at: Self.t0))
        #expect(try await store.token(hash: "rt9") == nil)
    }

    @Test(
        "The token read with its user (/userinfo) is the token read alone, ended with its grant or user",
        arguments: TestStores.kinds)
    func tokenWithUser(kind: StoreKind) async throws {
        let store = try await Self.storeWithGrant(kind)
        let found = try #require(try await store.tokenWithUser(hash: "at0"))
        #expect(try await found.token == store.token(hash: "at0"))
        #expect(try await found.user == store.user(id: "u1") && found.user?.username == "alice")
        #expect(try await store.tokenWithUser(hash: "none") == nil)
        // A token whose user is gone (what a redemption racing the deletion could leave): ended, no user.
        var orphan = Self.token("orphan-at", grant: "g-orphan")
        orphan.userID = "u-gone"
        var orphanGrant = Self.grant("g-orphan")
        orphanGrant.userID = "u-gone"
        try await store.insertGrant(orphanGrant, tokens: [orphan])
        let gone = try #require(try await store.tokenWithUser(hash: "orphan-at"))
        #expect(gone.user == nil && gone.token.grantEnded)
        #expect(try await gone.token == store.token(hash: "orphan-at"))
        // A token without a user (client credentials) reads with none.
        var service = Self.token("cc-at", grant: "g-cc")
        service.userID = nil
        var serviceGrant = Self.grant("g-cc")
        serviceGrant.userID = nil
        try await store.insertGrant(serviceGrant, tokens: [service])
        let alone = try #require(try await store.tokenWithUser(hash: "cc-at"))
        #expect(alone.user == nil && !alone.token.grantEnded)
        // Disabled: the user comes with the token, which is ended, as the token read alone says.
        #expect(try await store.setUserDisabled(id: "u1", at: Self.t0))
        let disabled = try #require(try await store.tokenWithUser(hash: "at0"))
        #expect(disabled.token.grantEnded && disabled.user?.disabledAt != nil)
        #expect(try await disabled.token == store.token(hash: "at0"))
        #expect(try await store.setUserDisabled(id: "u1", at: nil))
        try await store.revokeGrant(id: "g1", at: Self.t0)
        #expect(try await store.tokenWithUser(hash: "at0")?.token.grantEnded == true)
    }

    @Test("RV1 A disabled user's tokens are dead and rotate no more; enabled again, new grants work", arguments: TestStores.kinds)
    func tokensOfDisabledUser(kind: StoreKind) async throws {
        let store = try await Self.storeWithGrant(kind)
        #expect(try await store.setUserDisabled(id: "u1", at: Self.t0))
        #expect(try await store.token(hash: "at0")?.isActive(at: Self.t0) == false)
        #expect(try await !store.rotateRefreshToken(hash: "rt0", successors: [], at: Self.t0))
        // A grant and tokens written for the user after the disabling (what a racing redemption
        // could have stored), rows unrevoked: dead all the same, and the refresh token rotates not.
        try await store.insertGrant(
            Self.grant("g9"), tokens: [Self.token("late-rt", kind: .refresh, grant: "g9"), Self.token("late-at", grant: "g9")])
        let late = try #require(try await store.token(hash: "late-at"))
        #expect(late.revokedAt == nil && late.grantEnded && !late.isActive(at: Self.t0))
        #expect(try await !store.rotateRefreshToken(hash: "late-rt", successors: [], at: Self.t0))
        // A code read before the account was disabled does not become a grant after it.
        try await store.insertAuthorizationCode(Self.code())
        #expect(try await !store.redeemAuthorizationCode(codeHash: "code1", grant: Self.grant("g2"), tokens: [], at: Self.t0))
        #expect(try await store.grant(id: "g2") == nil)
        #expect(try await store.setUserDisabled(id: "u1", at: nil))
        #expect(try await store.redeemAuthorizationCode(codeHash: "code1", grant: Self.grant("g2"), tokens: [], at: Self.t0))
    }

    @Test(
        "RV3 A password change revokes every grant and takes outstanding codes and approved device requests",
        arguments: TestStores.kinds)
    func passwordChangeEndsAccess(kind: StoreKind) async throws {
        let store = try await Self.storeWithGrant(kind)
        try await store.insertAuthorizationCode(Self.code())
        let device = Self.deviceAuthorization()
        try await store.insertDeviceAuthorization(device)
        _ = try await store.claimDeviceAuthorization(
            userCodeHash: device.userCodeHash, by: SessionIDHash(rawValue: String(repeating: "1", count: 64)), at: Self.t0)
        #expect(try await store.settleDeviceAuthorization(deviceCodeHash: device.deviceCodeHash, status: .approved))
        try await store.insertAuthorizationCode(Self.code(device.deviceCodeHash))

        #expect(try await store.setPasswordHash(username: "alice", passwordHash: "$2b$04$new"))
        #expect(try await store.grant(id: "g1")?.revokedAt != nil)
        #expect(try await store.token(hash: "rt0")?.revokedAt != nil)
        #expect(try await store.authorizationCode(hash: "code1") == nil)
        #expect(try await store.authorizationCode(hash: CodeHash(rawValue: device.deviceCodeHash)) == nil)
        #expect(try await store.deviceAuthorization(deviceCodeHash: device.deviceCodeHash)?.status == .denied)
    }

    @Test("RV3 Disconnecting one app takes its outstanding codes, and leaves the other apps' alone", arguments: TestStores.kinds)
    func disconnectTakesCodes(kind: StoreKind) async throws {
        let store = try await Self.storeWithGrant(kind)
        try await store.insertAuthorizationCode(Self.code())
        var other = Self.code("code2")
        other.clientID = "c2"
        try await store.insertAuthorizationCode(other)
        try await store.revokeAuthorization(userID: "u1", clientID: "c1", at: Self.t0)
        #expect(try await store.authorizationCode(hash: "code1") == nil)
        #expect(try await store.authorizationCode(hash: "code2") != nil)
        #expect(try await store.token(hash: "at0")?.isActive(at: Self.t0) == false)
    }

    @Test(
        "RV23 A code or implicit grant is stored only while the user's access epoch is the one read before the decision",
        arguments: TestStores.kinds)
    func issuanceFollowsAccessEpoch(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        let epoch = try #require(try await store.user(id: "u1")).accessEpoch
        #expect(try await store.insertAuthorizationCode(Self.code(), whileAccessEpoch: epoch))
        // Every revocation of the user's access moves the epoch; what was read before it stores nothing.
        try await store.revokeAuthorization(userID: "u1", clientID: "c2", at: Self.t0)
        #expect(try await store.authorizationCode(hash: "code1") != nil, "another app's Disconnect leaves this code")
        let moved = try #require(try await store.user(id: "u1")).accessEpoch
        #expect(moved == epoch + 1)
        #expect(try await !store.insertAuthorizationCode(Self.code("code2"), whileAccessEpoch: epoch))
        #expect(try await store.authorizationCode(hash: "code2") == nil)
        #expect(
            try await !store.insertGrant(Self.grant("g5"), tokens: [Self.token("at5", grant: "g5")], whileAccessEpoch: epoch))
        #expect(try await store.grant(id: "g5") == nil)
        #expect(try await store.token(hash: "at5") == nil)
        #expect(try await store.insertGrant(Self.grant("g6"), tokens: [Self.token("at6", grant: "g6")], whileAccessEpoch: moved))
        #expect(try await store.token(hash: "at6")?.isActive(at: Self.t0) == true)
        #expect(try await store.setPasswordHash(username: "alice", passwordHash: "$2b$04$new"))
        #expect(try await !store.insertAuthorizationCode(Self.code("code3"), whileAccessEpoch: moved))
        let changed = try #require(try await store.user(id: "u1")).accessEpoch
        #expect(try await store.setUserDisabled(id: "u1", at: Self.t0))
        #expect(try await !store.insertAuthorizationCode(Self.code("code4"), whileAccessEpoch: changed + 1))
        #expect(try await store.setUserDisabled(id: "u1", at: nil))
        // Disabled, then enabled: the epoch moved with the disabling, so a decision read before it stays void.
        #expect(try await !store.insertAuthorizationCode(Self.code("code4"), whileAccessEpoch: changed))
        #expect(try await store.insertAuthorizationCode(Self.code("code4"), whileAccessEpoch: changed + 1))
    }
}

/// RV21: what unauthenticated requests ask of the clients table, answered without reading it all.
extension StoreConformanceTests {
    @Test("RV21 Whether an implicit browser client exists, and how many clients registered each way", arguments: TestStores.kinds)
    func clientCensus(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        #expect(try await !store.implicitClientExists())
        try await store.insertClient(Self.client("c1"))
        var implicitNative = Self.client("c2")
        implicitNative.allowImplicit = true
        try await store.insertClient(implicitNative)
        #expect(try await !store.implicitClientExists(), "only a browser client may use the implicit grant")
        try await store.insertClient(Self.client("c3", type: .browser))
        #expect(try await store.implicitClientExists())
        var documented = Self.client("https://app.example/client.json")
        documented.registration = .metadataDocument
        try await store.insertClient(documented)
        #expect(try await store.clientCount(registration: .administrator) == 3)
        #expect(try await store.clientCount(registration: .metadataDocument) == 1)
        #expect(try await store.clientCount(registration: .dynamic) == 0)
    }
}
