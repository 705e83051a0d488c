import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("Login and consent")
struct ConsentTests {
    func pendingConsent(_ fixture: Fixture, session: BrowserSession, scope: String = "profile activity sleep") async throws
        -> ConsentPrompt
    {
        let step = try await fixture.server.authorization.authorize(
            FormParameters([
                ("response_type", "code"), ("client_id", fixture.native.id.rawValue), ("scope", scope), ("state", "st"),
                ("redirect_uri", "com.example.notes:/oauth2redirect"),
                ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
            ]), session: session)
        guard case .consent(let prompt) = step else { throw FixtureError("expected consent, got \(step)") }
        return prompt
    }

    func decide(
        _ fixture: Fixture, _ prompt: ConsentPrompt, session: BrowserSession, scopes: [String], decision: String = "allow"
    )
        async throws -> AuthorizationStep
    {
        var form = [("csrf_token", session.csrfToken), ("request", prompt.pendingID), ("decision", decision)]
        form += scopes.map { ("scope", $0) }
        return try await fixture.server.authorization.decide(FormParameters(form), session: session)
    }

    @Test("T50 Unticked scopes are not granted, and the token's scope says so")
    func partialConsent() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code(scope: "profile activity sleep", grant: ["profile", "sleep"])
        let response = try await fixture.exchange(code).get()
        #expect(response.scope == "profile sleep")
    }

    @Test("T50 A tampered form cannot add scopes that were not requested")
    func tamperedConsent() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code(scope: "profile", grant: ["profile", "activity", "admin"])
        #expect(try await fixture.exchange(code).get().scope == "profile")
    }

    @Test("T26 Deny redirects with access_denied, the state and iss; so does granting nothing")
    func deny() async throws {
        let fixture = try await Fixture.make()
        let session = try await fixture.signedInSession()
        for (decision, scopes) in [("deny", ["profile"]), ("allow", [])] {
            let prompt = try await pendingConsent(fixture, session: session)
            let step = try await decide(fixture, prompt, session: session, scopes: scopes, decision: decision)
            guard case .redirect(let location) = step else { Issue.record("no redirect"); continue }
            #expect(location.hasPrefix("com.example.notes:/oauth2redirect?"))
            #expect(Fixture.parameter("error", in: location) == "access_denied")
            #expect(Fixture.parameter("state", in: location) == "st")
            #expect(Fixture.parameter("iss", in: location) == Fixture.issuer)
            #expect(Fixture.parameter("code", in: location) == nil)
        }
    }

    @Test(
        "Consent is remembered for the same or fewer scopes, and asked again for more; only a request with a page is stored")
    func rememberedConsent() async throws {
        let fixture = try await Fixture.make()
        let session = try await fixture.signedInSession()
        // Every pending request ever stored, deleted or not, is logged by a trigger.
        _ = try await fixture.store.execute(
            [
                .run("CREATE TABLE stored_requests (id TEXT)"),
                .run(
                    """
                    CREATE TRIGGER stored_request AFTER INSERT ON pending_authorizations
                    BEGIN INSERT INTO stored_requests VALUES (NEW.id); END
                    """),
            ], operation: "test")
        func pendingRequests() async throws -> Int {
            try await fixture.store.fetch("SELECT count(*) FROM stored_requests", operation: "count") { try $0.int(0) }[0]
        }
        let prompt = try await pendingConsent(fixture, session: session, scope: "profile activity")
        // The consent page continues a stored request.
        #expect(try await fixture.store.pendingAuthorization(id: PendingRequestID(rawValue: prompt.pendingID)) != nil)
        _ = try await decide(fixture, prompt, session: session, scopes: ["profile"])
        #expect(try await pendingRequests() == 1)
        // profile was granted, activity was not: profile alone skips the page ...
        let again = try await fixture.server.authorization.authorize(
            FormParameters([
                ("response_type", "code"), ("client_id", fixture.native.id.rawValue), ("scope", "profile"),
                ("redirect_uri", "com.example.notes:/oauth2redirect"),
                ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
            ]), session: session)
        guard case .redirect(let location) = again else { Issue.record("expected a redirect, got \(again)"); return }
        #expect(Fixture.parameter("code", in: location) != nil)
        // Answered within its own request, it was never stored: no write beyond the code's.
        #expect(try await pendingRequests() == 1)
        // ... but asking for activity again shows the page.
        let more = try await pendingConsent(fixture, session: session, scope: "profile activity")
        #expect(try await fixture.store.pendingAuthorization(id: PendingRequestID(rawValue: more.pendingID)) != nil)
        #expect(try await pendingRequests() == 2)
    }

    @Test("T60 T61 A decision without this session's CSRF token is refused and issues nothing")
    func csrf() async throws {
        let fixture = try await Fixture.make()
        let session = try await fixture.signedInSession()
        let prompt = try await pendingConsent(fixture, session: session)
        let forged = try await fixture.server.authorization.decide(
            FormParameters([
                ("csrf_token", "lk_xs_forged"), ("request", prompt.pendingID), ("decision", "allow"), ("scope", "profile"),
            ]),
            session: session)
        guard case .forbidden = forged else { Issue.record("expected 403, got \(forged)"); return }
        let missing = try await fixture.server.authorization.decide(
            FormParameters([("request", prompt.pendingID), ("decision", "allow"), ("scope", "profile")]), session: session)
        guard case .forbidden = missing else { Issue.record("expected 403, got \(missing)"); return }
        // The real decision still works afterwards.
        guard case .redirect = try await decide(fixture, prompt, session: session, scopes: ["profile"]) else {
            Issue.record("the genuine decision failed"); return
        }
    }

    @Test("T61 A request cannot be decided from another browser session, nor twice")
    func binding() async throws {
        let fixture = try await Fixture.make()
        let victim = try await fixture.signedInSession()
        let attacker = try await fixture.signedInSession()
        let prompt = try await pendingConsent(fixture, session: victim)
        let crossed = try await decide(fixture, prompt, session: attacker, scopes: ["profile"])
        guard case .errorPage = crossed else { Issue.record("expected an error page, got \(crossed)"); return }
        guard case .redirect = try await decide(fixture, prompt, session: victim, scopes: ["profile"]) else {
            Issue.record("first decision failed"); return
        }
        let twice = try await decide(fixture, prompt, session: victim, scopes: ["profile"])
        guard case .errorPage = twice else { Issue.record("expected an error page, got \(twice)"); return }
    }

    @Test("T62 A wrong password and an unknown user fail the same way")
    func wrongPassword() async throws {
        let fixture = try await Fixture.make()
        let session = try await fixture.server.sessions.session(cookie: nil).session
        for (username, password) in [("alice", "wrong-password"), ("nobody", "whatever-password")] {
            let result = try await fixture.server.sessions.signIn(
                FormParameters([("csrf_token", session.csrfToken), ("username", username), ("password", password)]),
                session: session, clientAddress: "127.0.0.1")
            guard case .failed = result else { Issue.record("expected failure, got \(result)"); continue }
        }
    }

    @Test("T60 T63 Sign-in needs the CSRF token and gives a fresh session id that keeps the pending request")
    func signIn() async throws {
        let fixture = try await Fixture.make()
        let anonymous = try await fixture.server.sessions.session(cookie: nil).session
        let credentials = [("username", "alice"), ("password", Fixture.password)]
        let forged = try await fixture.server.sessions.signIn(
            FormParameters(credentials), session: anonymous, clientAddress: "127.0.0.1")
        guard case .forbidden = forged else { Issue.record("expected 403, got \(forged)"); return }

        let step = try await fixture.server.authorization.authorize(
            FormParameters([
                ("response_type", "code"), ("client_id", fixture.native.id.rawValue), ("scope", "profile"),
                ("redirect_uri", "com.example.notes:/oauth2redirect"),
                ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
            ]), session: anonymous)
        guard case .signIn(let pendingID, _, _, _) = step else { Issue.record("expected sign-in"); return }
        let result = try await fixture.server.sessions.signIn(
            FormParameters([("csrf_token", anonymous.csrfToken), ("request", pendingID)] + credentials), session: anonymous,
            clientAddress: "127.0.0.1")
        guard case .signedIn(let fresh, let resumed) = result else { Issue.record("sign-in failed: \(result)"); return }
        #expect(fresh.session.idHash != anonymous.idHash)
        #expect(fresh.session.csrfToken != anonymous.csrfToken)
        #expect(resumed == pendingID)
        #expect(
            try await fixture.store.session(idHash: anonymous.idHash) == nil,
            "the old session id no longer works")
        guard case .consent = try await fixture.server.authorization.resume(pendingID: pendingID, session: fresh.session) else {
            Issue.record("the pending request did not follow the new session"); return
        }
    }

    @Test("An expired pending request cannot be resumed")
    func expiredPending() async throws {
        let fixture = try await Fixture.make()
        let session = try await fixture.signedInSession()
        let prompt = try await pendingConsent(fixture, session: session)
        fixture.clock.advance(by: 11 * 60)
        guard case .errorPage = try await decide(fixture, prompt, session: session, scopes: ["profile"]) else {
            Issue.record("expected an error page"); return
        }
    }
}
