import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// TOTP (RFC 6238) and the second sign-in step over plain types; the same over real HTTP with
/// pyotp's codes is `Tests/Interop/test_second_factors.py`.
@Suite("Second factors")
struct SecondFactorTests {
    func form(_ session: BrowserSession, _ fields: [(String, String)]) -> FormParameters {
        FormParameters([("csrf_token", session.csrfToken)] + fields)
    }

    @Test("RFC 6238 Appendix B's SHA-1 vectors (eight digits), and six-digit codes keep their leading zeros")
    func rfc6238Vectors() {
        let totp = TOTP(key: Array("12345678901234567890".utf8))
        let vectors: [(Double, String)] = [
            (59, "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"), (1_234_567_890, "89005924"),
            (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
        ]
        for (time, code) in vectors {
            #expect(totp.code(step: TOTP.step(at: Date(timeIntervalSince1970: time)), digits: 8) == code)
        }
        #expect(totp.code(step: TOTP.step(at: Date(timeIntervalSince1970: 1_111_111_109))) == "081804")
    }

    @Test("MF1 A code is accepted one step either side of now, not two, and only as six digits")
    func window() {
        let totp = TOTP.generateKey()
        let now = Date(timeIntervalSince1970: 1_800_000_015)
        let step = TOTP.step(at: now)
        for offset in -1...1 { #expect(totp.matchingStep(totp.code(step: step + offset), at: now) == step + offset) }
        for offset in [-2, 2] where ![-1, 0, 1].contains(where: { totp.code(step: step + $0) == totp.code(step: step + offset) })
        {
            #expect(totp.matchingStep(totp.code(step: step + offset), at: now) == nil)
        }
        let code = totp.code(step: step)
        #expect(totp.matchingStep(String(code.prefix(3)) + " " + String(code.dropFirst(3)), at: now) == step)
        #expect(totp.matchingStep(code + "0", at: now) == nil)
        #expect(totp.matchingStep("١٢٣٤٥٦", at: now) == nil)
    }

    @Test("The otpauth URI names the site and account and carries the key in base32")
    func provisioningURI() throws {
        let totp = TOTP(key: Array(repeating: 0xAB, count: 20))
        let uri = try #require(URLComponents(string: totp.provisioningURI(issuer: "auth.example.com", account: "a b")))
        #expect(uri.scheme == "otpauth" && uri.host == "totp" && uri.path == "/auth.example.com:a b")
        let items = Dictionary(uniqueKeysWithValues: (uri.queryItems ?? []).map { ($0.name, $0.value ?? "") })
        #expect(Base32.decode(items["secret"] ?? "") == totp.key)
        #expect(items["issuer"] == "auth.example.com" && items["digits"] == "6" && items["period"] == "30")
        #expect(totp.keyText.split(separator: " ").allSatisfy { $0.count == 4 })
    }

    @Test("MF1 The key is stored sealed, bound to its row: copied to another row it does not open")
    func keySealed() async throws {
        let fixture = try await Fixture.make()
        let enrolment = try await fixture.server.secondFactors.beginTOTP(for: fixture.alice)
        let stored = try #require(try await fixture.store.secondFactors(userID: fixture.alice.id).first)
        let key = try #require(Base32.decode(enrolment.keyText))
        #expect(!stored.secret.contains(Base32.encode(key)) && !stored.secret.contains(Base64URL.encode(key)))
        var copy = stored
        copy.id = "another-row"
        try await fixture.store.insertPendingTOTP(copy)
        await #expect(throws: SigningKeyError.self) {
            _ = try await fixture.server.secondFactors.enrolment(copy.id, of: fixture.alice)
        }
    }

    @Test("MF4 A password leaves the session owing the second step, for ten minutes; a code then signs in with both")
    func secondStep() async throws {
        let fixture = try await Fixture.make()
        let enrolment = try await fixture.server.secondFactors.beginTOTP(for: fixture.alice)
        let totp = TOTP(key: try #require(Base32.decode(enrolment.keyText)))
        let start = try await fixture.server.sessions.session(cookie: nil).session
        let code = totp.code(step: TOTP.step(at: fixture.clock.now))
        guard case .recoveryCodes? = try await confirm(fixture, enrolment, code, start) else {
            Issue.record("not confirmed"); return
        }
        func passwordStep() async throws -> BrowserSession? {
            let session = try await fixture.server.sessions.session(cookie: nil).session
            let result = try await fixture.server.sessions.signIn(
                form(session, [("username", "alice"), ("password", Fixture.password)]), session: session,
                clientAddress: "192.0.2.1")
            guard case .secondFactorNeeded(let half, nil) = result else { Issue.record("\(result)"); return nil }
            return half.session
        }
        let half = try #require(try await passwordStep())
        #expect(half.userID == nil && half.secondFactorUserID == fixture.alice.id)
        #expect(try await fixture.server.sessions.signedInUser(half) == nil)

        fixture.clock.advance(by: 30)
        let next = totp.code(step: TOTP.step(at: fixture.clock.now))
        let result = try await fixture.server.secondFactors.verify(
            form(half, [("code", next)]), session: half, clientAddress: "192.0.2.1")
        guard case .signedIn(let full, nil) = result else { Issue.record("\(result)"); return }
        #expect(full.session.userID == fixture.alice.id && full.session.amr == .passwordAndOneTimeCode)
        #expect(try await fixture.store.session(idHash: half.idHash) == nil)

        // Ten minutes after the password, the half-signed-in session is no way in.
        let late = try #require(try await passwordStep())
        fixture.clock.advance(by: SecondFactors.secondStepLifetime + 30)
        let tooLate = try await fixture.server.secondFactors.verify(
            form(late, [("code", totp.code(step: TOTP.step(at: fixture.clock.now)))]), session: late,
            clientAddress: "192.0.2.1")
        guard case .expired = tooLate else { Issue.record("\(tooLate)"); return }
        // Without the session's CSRF token, nothing is checked.
        guard
            case .forbidden = try await fixture.server.secondFactors.verify(
                FormParameters([("code", next)]), session: late, clientAddress: "192.0.2.1")
        else { Issue.record("a form without its CSRF token was checked"); return }
    }

    @Test("MF4 The consent form cannot stand in for a second factor set up after the page was shown")
    func consentFormChecksTheLevel() async throws {
        let fixture = try await Fixture.make()
        let session = try await fixture.signedInSession()
        let step = try await fixture.server.authorization.authorize(
            FormParameters([
                ("response_type", "code"), ("client_id", fixture.native.id.rawValue), ("scope", "profile"),
                ("state", "st"), ("redirect_uri", "com.example.notes:/oauth2redirect"),
                ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
            ]), session: session)
        guard case .consent(let prompt) = step else { Issue.record("\(step)"); return }
        // alice turns on an authenticator elsewhere; this browser signed in with the password alone.
        try await fixture.store.insertPendingTOTP(
            SecondFactor(id: "f1", userID: fixture.alice.id, kind: .totp, name: "App", secret: "x", createdAt: fixture.clock.now))
        #expect(
            try await fixture.store.confirmTOTP(
                id: "f1", userID: fixture.alice.id, step: 1, recoveryCodes: [], at: fixture.clock.now))
        let decided = try await fixture.server.authorization.decide(
            FormParameters([
                ("csrf_token", session.csrfToken), ("request", prompt.pendingID), ("decision", "allow"), ("scope", "profile"),
            ]), session: session)
        guard case .secondFactor(let pendingID) = decided else { Issue.record("\(decided)"); return }
        #expect(pendingID == prompt.pendingID)
    }

    func confirm(_ fixture: Fixture, _ enrolment: TOTPEnrolment, _ code: String, _ session: BrowserSession) async throws
        -> SelfServiceOutcome?
    {
        var signedIn = session
        signedIn.idHash = SessionIDHash(of: "signed-in")
        signedIn.userID = fixture.alice.id
        signedIn.accessEpoch = fixture.alice.accessEpoch
        try await fixture.store.insertSession(signedIn)
        return try await fixture.server.secondFactors.confirm(
            form(signedIn, [("factor", enrolment.factorID.rawValue), ("code", code)]), session: signedIn,
            clientAddress: "192.0.2.1")
    }
}
