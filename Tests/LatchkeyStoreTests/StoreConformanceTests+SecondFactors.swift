import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Second factors on both stores: a TOTP step and a recovery code each work once, also when many
/// uses come at once; confirming replaces the older authenticator and codes; how a session signed
/// in travels with it, its codes and grants; a half-signed-in session ends with the password.
extension StoreConformanceTests {
    static func factor(
        _ id: String, _ kind: SecondFactorKind, user: String = "u1", secret: String = "sealed", at: Date = t0
    ) -> SecondFactor {
        SecondFactor(
            id: SecondFactorID(rawValue: id), userID: UserID(rawValue: user), kind: kind,
            name: kind == .totp ? "Authenticator app" : "", secret: secret, createdAt: at)
    }

    @Test("MF2 A TOTP step is accepted once, of many uses at once, and no earlier step after it", arguments: TestStores.kinds)
    func totpStepsWorkOnce(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        try await store.insertPendingTOTP(Self.factor("f1", .totp))
        #expect(try await store.secondFactors(userID: "u1").map(\.isActive) == [false])
        // An unconfirmed authenticator takes no codes.
        #expect(try await !store.useTOTP(id: "f1", step: 5, at: Self.t0))
        let codes = [Self.factor("r1", .recoveryCode, secret: "h1"), Self.factor("r2", .recoveryCode, secret: "h2")]
        #expect(try await !store.confirmTOTP(id: "f1", userID: "u2", step: 100, recoveryCodes: codes, at: Self.t0))
        #expect(try await store.confirmTOTP(id: "f1", userID: "u1", step: 100, recoveryCodes: codes, at: Self.t0))
        #expect(try await !store.confirmTOTP(id: "f1", userID: "u1", step: 100, recoveryCodes: codes, at: Self.t0))

        let accepted = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { try await store.useTOTP(id: "f1", step: 101, at: Self.t0) } }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(accepted.filter { $0 }.count == 1)
        #expect(try await !store.useTOTP(id: "f1", step: 100, at: Self.t0))
        #expect(try await store.useTOTP(id: "f1", step: 102, at: Self.t0.addingTimeInterval(60)))
        let stored = try #require(try await store.secondFactors(userID: "u1").first { $0.kind == .totp })
        #expect(stored.lastStep == 102 && stored.lastUsedAt == Self.t0.addingTimeInterval(60) && stored.secret == "sealed")
    }

    @Test("MF2 A recovery code is used once, of many uses at once", arguments: TestStores.kinds)
    func recoveryCodesWorkOnce(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        try await store.insertPendingTOTP(Self.factor("f1", .totp))
        let codes = (0..<3).map { Self.factor("r\($0)", .recoveryCode, secret: "hash\($0)") }
        #expect(try await store.confirmTOTP(id: "f1", userID: "u1", step: 1, recoveryCodes: codes, at: Self.t0))
        let used = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { try await store.useRecoveryCode(userID: "u1", hash: "hash1", at: Self.t0) } }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(used.filter { $0 }.count == 1)
        #expect(try await !store.useRecoveryCode(userID: "u2", hash: "hash2", at: Self.t0))
        #expect(try await store.secondFactors(userID: "u1").filter { $0.kind == .recoveryCode && $0.isActive }.count == 2)

        // New codes replace every old one; a new authenticator replaces the old one and its codes.
        try await store.replaceRecoveryCodes(userID: "u1", with: [Self.factor("r9", .recoveryCode, secret: "new")])
        #expect(try await !store.useRecoveryCode(userID: "u1", hash: "hash2", at: Self.t0))
        try await store.insertPendingTOTP(Self.factor("f2", .totp, secret: "other"))
        #expect(try await store.confirmTOTP(id: "f2", userID: "u1", step: 7, recoveryCodes: [], at: Self.t0))
        #expect(try await store.secondFactors(userID: "u1").map(\.id) == ["f2"])
        try await store.deleteSecondFactors(userID: "u1")
        #expect(try await store.secondFactors(userID: "u1").isEmpty)
    }

    @Test(
        "MF4 How a session signed in goes with it, its codes and grants; a half-signed-in one ends with the password",
        arguments: TestStores.kinds)
    func signInMethodsTravel(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        let later = Self.t0.addingTimeInterval(600)
        let signedIn = BrowserSession(
            idHash: "s1", userID: "u1", csrfToken: "x", createdAt: Self.t0, expiresAt: later,
            amr: .passwordAndOneTimeCode)
        let halfway = BrowserSession(
            idHash: "s2", userID: nil, csrfToken: "y", createdAt: Self.t0, expiresAt: later, amr: .password,
            secondFactorUserID: "u1")
        try await store.insertSession(signedIn)
        try await store.replaceSession(oldIDHash: nil, with: halfway)
        #expect(try await store.session(idHash: "s1")?.amr == .passwordAndOneTimeCode)
        #expect(try await store.session(idHash: "s2")?.secondFactorUserID == "u1")

        var code = Self.code()
        code.amr = .passwordAndOneTimeCode
        try await store.insertAuthorizationCode(code)
        #expect(try await store.authorizationCode(hash: code.codeHash)?.amr == .passwordAndOneTimeCode)
        var grant = Self.grant()
        grant.amr = .passwordAndOneTimeCode
        #expect(try await store.redeemAuthorizationCode(codeHash: code.codeHash, grant: grant, tokens: [], at: Self.t0))
        #expect(try await store.grant(id: grant.id)?.amr == .passwordAndOneTimeCode)
        // What was stored before second factors reads as a password sign-in.
        #expect(AuthenticationMethods(storeValue: nil) == .password)

        #expect(try await store.setPasswordHash(username: "alice", passwordHash: "$2b$04$new"))
        #expect(try await store.session(idHash: "s1") == nil)
        #expect(try await store.session(idHash: "s2") == nil)
    }
}

extension StoreConformanceTests {
    @Test("PK2 A passkey challenge is taken once, by its own session, of many tries at once", arguments: TestStores.kinds)
    func passkeyChallengesWorkOnce(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        let challenge = PasskeyChallenge(
            hash: PasskeyChallengeHash(of: "challenge"), sessionIDHash: "s1", purpose: .signIn, userID: nil,
            expiresAt: Self.t0.addingTimeInterval(300))
        try await store.insertPasskeyChallenge(challenge)
        #expect(try await store.takePasskeyChallenge(hash: challenge.hash, sessionIDHash: "s2", at: Self.t0) == nil)
        let taken = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await store.takePasskeyChallenge(hash: challenge.hash, sessionIDHash: "s1", at: Self.t0) != nil
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(taken.filter { $0 }.count == 1)
        // An expired challenge is not taken.
        var late = challenge
        late.hash = PasskeyChallengeHash(of: "late")
        try await store.insertPasskeyChallenge(late)
        #expect(try await store.takePasskeyChallenge(hash: late.hash, sessionIDHash: "s1", at: late.expiresAt) == nil)
    }

    @Test(
        "PK3 A passkey's counter only moves forward (0 stays 0), once of many at once; one id, one passkey",
        arguments: TestStores.kinds)
    func passkeyCounters(kind: StoreKind) async throws {
        let store = try await TestStores.make(kind)
        try await store.insertUser(Self.user())
        let passkey = Passkey(
            credentialID: "cred1", userID: "u1", name: "Phone", publicKey: "-7.AA", signCount: 5, backupEligible: false,
            createdAt: Self.t0)
        try await store.insertPasskey(passkey)
        await #expect(throws: StoreError.self) { try await store.insertPasskey(passkey) }
        #expect(try await store.passkey(credentialID: "cred1") == passkey)
        #expect(try await !store.usePasskey(credentialID: "cred1", signCount: 5, at: Self.t0))
        let moved = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { try await store.usePasskey(credentialID: "cred1", signCount: 6, at: Self.t0) } }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(moved.filter { $0 }.count == 1)
        #expect(try await !store.usePasskey(credentialID: "cred1", signCount: 3, at: Self.t0))
        var synced = passkey
        synced.credentialID = "cred2"
        synced.signCount = 0
        try await store.insertPasskey(synced)
        #expect(try await store.usePasskey(credentialID: "cred2", signCount: 0, at: Self.t0))
        #expect(try await store.usePasskey(credentialID: "cred2", signCount: 0, at: Self.t0))
        #expect(try await !store.deletePasskey(credentialID: "cred2", userID: "u2"))
        #expect(try await store.deletePasskey(credentialID: "cred2", userID: "u1"))
        #expect(try await store.passkeys(userID: "u1").map(\.credentialID) == ["cred1"])
        _ = try await store.deleteUser(username: "alice")
        #expect(try await store.passkey(credentialID: "cred1") == nil)
    }
}
