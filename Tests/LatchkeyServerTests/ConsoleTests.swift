import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The admin console's rules over plain types: who may enter, what self-service users may do,
/// re-authentication, disabled accounts and first-party apps.
@Suite("Admin console")
struct ConsoleTests {
    func context(_ fixture: Fixture, as username: String) async throws -> SessionContext {
        let (_, cookie) = try await fixture.signedIn(as: username)
        return try await fixture.server.sessions.session(cookie: cookie)
    }

    func viewer(_ access: ConsoleAccess) throws -> ConsoleUser {
        guard case .allowed(let viewer) = access else { throw FixtureError("not allowed: \(access)") }
        return viewer
    }

    @Test("Roles: an administrator enters every area; another user is refused, and a signed-out visitor signs in")
    func roles() async throws {
        let fixture = try await Fixture.make()
        try await fixture.admin.setRole(username: "alice", role: .admin)
        let alice = try await context(fixture, as: "alice")
        for area in [ConsoleArea.apps, .administration] {
            #expect(try viewer(try await fixture.server.console.consoleAccess(alice, area: area)).isAdmin)
        }
        let bob = try await context(fixture, as: "bob")
        for area in [ConsoleArea.apps, .administration] {
            guard case .forbidden = try await fixture.server.console.consoleAccess(bob, area: area) else {
                Issue.record("bob entered \(area)")
                continue
            }
        }
        let anonymous = try await fixture.server.sessions.session(cookie: nil)
        guard case .signIn = try await fixture.server.console.consoleAccess(anonymous, area: .apps) else {
            Issue.record("a signed-out visitor should be sent to sign in")
            return
        }
        // Removing the role takes effect on the next page.
        try await fixture.admin.setRole(username: "alice", role: .none)
        guard case .forbidden = try await fixture.server.console.consoleAccess(alice, area: .administration) else {
            Issue.record("alice kept the console after losing the role")
            return
        }
    }

    @Test("AD3 RV11 The console's idle timeout is shorter than the session's, and ends the session")
    func idleTimeout() async throws {
        let fixture = try await Fixture.make()
        try await fixture.admin.setRole(username: "alice", role: .admin)
        let (_, cookie) = try await fixture.signedIn(as: "alice")
        fixture.clock.advance(by: fixture.server.configuration.adminSessionIdleTimeout + 60)
        let later = try await fixture.server.sessions.session(cookie: cookie)
        #expect(later.session.userID == fixture.alice.id, "the ordinary session is still alive")
        guard case .signIn = try await fixture.server.console.consoleAccess(later, area: .apps) else {
            Issue.record("an idle admin session should sign in again")
            return
        }
        // RV11: reading the session recorded this visit, so the refusal must not be all: the next
        // request, no longer idle, is refused too, because the session has ended.
        let next = try await fixture.server.sessions.session(cookie: cookie)
        #expect(next.session.userID == nil, "the idle session was ended")
        guard case .signIn = try await fixture.server.console.consoleAccess(next, area: .apps) else {
            Issue.record("the second request after the idle timeout must not get in")
            return
        }
    }

    @Test("Self-service: any user registers personal apps, sees only their own, and cannot make service or first-party apps")
    func selfService() async throws {
        let fixture = try await Fixture.make { $0.selfServiceApps = true }
        let bob = try viewer(try await fixture.server.console.consoleAccess(try await context(fixture, as: "bob"), area: .apps))
        guard
            case .forbidden = try await fixture.server.console.consoleAccess(
                try await context(fixture, as: "bob"), area: .administration)
        else {
            Issue.record("self-service must not open users and scopes")
            return
        }
        #expect(try await fixture.server.console.consoleApps(for: bob).isEmpty, "bob sees none of the others' apps")
        // Whatever owner the form names, the app is bob's.
        var settings = ClientSettings(
            type: .native, name: "Bob's tool", redirectURIs: ["http://127.0.0.1/callback"], ownerUsername: "alice")
        let registered = try await fixture.server.console.consoleRegister(settings, by: bob)
        #expect(registered.client.ownerUserID == fixture.bob.id)
        #expect(try await fixture.server.console.consoleApps(for: bob).map(\.client.id) == [registered.client.id])
        #expect(try await fixture.server.console.consoleApp(id: fixture.native.id.rawValue, for: bob) == nil)
        await #expect(throws: AdministrationError.self) {
            try await fixture.server.console.consoleUpdate(id: fixture.native.id.rawValue, settings, by: bob)
        }
        settings.firstParty = true
        await #expect(throws: AdministrationError.self) { try await fixture.server.console.consoleRegister(settings, by: bob) }
        settings.firstParty = false
        settings.type = .service
        settings.redirectURIs = []
        await #expect(throws: AdministrationError.self) { try await fixture.server.console.consoleRegister(settings, by: bob) }
    }

    @Test("Re-authentication: the password counts as recent for the window; a wrong one is refused and throttled")
    func reauthentication() async throws {
        let fixture = try await Fixture.make()
        try await fixture.admin.setRole(username: "alice", role: .admin)
        let alice = try await context(fixture, as: "alice")
        #expect(try viewer(try await fixture.server.console.consoleAccess(alice, area: .apps)).recentlyAuthenticated)
        fixture.clock.advance(by: fixture.server.configuration.adminReauthenticationWindow + 1)
        let (_, cookie) = try await fixture.signedIn(as: "alice")
        fixture.clock.advance(by: fixture.server.configuration.adminReauthenticationWindow + 1)
        let stale = try await fixture.server.sessions.session(cookie: cookie)
        #expect(try !viewer(try await fixture.server.console.consoleAccess(stale, area: .apps)).recentlyAuthenticated)

        let session = stale.session
        let noCSRF = FormParameters([("password", Fixture.password)])
        guard case .forbidden = try await fixture.server.console.reauthenticate(noCSRF, session: session, clientAddress: "a")
        else {
            Issue.record("re-authentication without the CSRF token must be refused")
            return
        }
        let wrong = FormParameters([("csrf_token", session.csrfToken), ("password", "wrong password")])
        guard case .refused = try await fixture.server.console.reauthenticate(wrong, session: session, clientAddress: "a") else {
            Issue.record("a wrong password must be refused")
            return
        }
        let right = FormParameters([("csrf_token", session.csrfToken), ("password", Fixture.password)])
        guard
            case .renewed(let fresh) = try await fixture.server.console.reauthenticate(
                right, session: session, clientAddress: "a")
        else {
            Issue.record("the right password should renew the session")
            return
        }
        #expect(fresh.session.idHash != session.idHash && fresh.newCookie != nil, "a fresh session id")
        #expect(try await fixture.store.session(idHash: session.idHash) == nil, "the old session is gone")
        #expect(try viewer(try await fixture.server.console.consoleAccess(fresh, area: .apps)).recentlyAuthenticated)

        // Wrong passwords count against the account as sign-in failures do.
        for _ in 0..<fixture.server.configuration.signInAttemptsPerAccount {
            _ = try await fixture.server.console.reauthenticate(
                FormParameters([("csrf_token", fresh.session.csrfToken), ("password", "nope-nope")]), session: fresh.session,
                clientAddress: "a")
        }
        guard
            case .refused(_, let retryAfter?) = try await fixture.server.console.reauthenticate(
                FormParameters([("csrf_token", fresh.session.csrfToken), ("password", Fixture.password)]),
                session: fresh.session, clientAddress: "a")
        else {
            Issue.record("after the account's limit even the right password must wait")
            return
        }
        #expect(retryAfter > 0)
    }

    @Test("A disabled user cannot sign in, their tokens stop at once, and enabling lets them sign in again")
    func disabledUser() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code()
        let tokens = try await fixture.exchange(code).get()
        let (_, cookie) = try await fixture.signedIn(as: "alice")
        try await fixture.admin.setDisabled(username: "alice", true)

        #expect(
            try await fixture.server.sessions.signedInUser(try await fixture.server.sessions.session(cookie: cookie).session)
                == nil)
        let anonymous = try await fixture.server.sessions.session(cookie: nil).session
        let form = FormParameters([
            ("csrf_token", anonymous.csrfToken), ("username", "alice"), ("password", Fixture.password),
        ])
        guard case .disabled = try await fixture.server.sessions.signIn(form, session: anonymous, clientAddress: "127.0.0.1")
        else {
            Issue.record("a disabled account must not sign in")
            return
        }
        let wrong = FormParameters([("csrf_token", anonymous.csrfToken), ("username", "alice"), ("password", "not it!")])
        guard case .failed = try await fixture.server.sessions.signIn(wrong, session: anonymous, clientAddress: "127.0.0.1")
        else {
            Issue.record("a wrong password must not learn that the account is disabled")
            return
        }
        let introspection = await fixture.server.introspection.introspect(
            TokenRequest(body: FormParameters([("token", tokens.accessToken)]), authorization: fixture.serviceBasic))
        #expect(try introspection.get() == .inactive, "the access token stopped at once")
        guard case .failure = await fixture.refresh(tokens.refreshToken!) else {
            Issue.record("the refresh token must stop too")
            return
        }

        try await fixture.admin.setDisabled(username: "alice", false)
        _ = try await fixture.signedIn(as: "alice")
    }

    @Test("A first-party app gets its code without a consent page, and the consent is recorded")
    func firstParty() async throws {
        let fixture = try await Fixture.make()
        let app = try await fixture.admin.registerClient(
            type: .native, name: "Company App", redirectURIs: ["http://127.0.0.1/callback"], scopes: ["profile", "activity"],
            firstParty: true)
        let session = try await fixture.signedInSession()
        let parameters = FormParameters([
            ("response_type", "code"), ("client_id", app.client.id.rawValue), ("scope", "profile activity"),
            ("redirect_uri", "http://127.0.0.1:5000/callback"), ("state", "s"),
            ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
        ])
        guard case .redirect(let location) = try await fixture.server.authorization.authorize(parameters, session: session) else {
            Issue.record("a first-party app should not show the consent page")
            return
        }
        #expect(Fixture.parameter("code", in: location) != nil)
        let consent = try await fixture.store.consent(userID: fixture.alice.id, clientID: app.client.id)
        #expect(consent?.scope == ScopeSet(["profile", "activity"]))
        // An ordinary app still asks.
        let other = FormParameters([
            ("response_type", "code"), ("client_id", fixture.native2.id.rawValue), ("scope", "profile"),
            ("redirect_uri", "com.example.other:/cb"), ("code_challenge", Fixture.verifier.s256Challenge),
            ("code_challenge_method", "S256"),
        ])
        guard case .consent = try await fixture.server.authorization.authorize(other, session: session) else {
            Issue.record("other apps must still ask for consent")
            return
        }
    }

    @Test("Client settings are checked the same for the console as for the CLI, naming the field at fault")
    func settingsName() async throws {
        let fixture = try await Fixture.make()
        let cases: [(ClientSettings, String)] = [
            (ClientSettings(type: .native, name: " ", redirectURIs: ["http://127.0.0.1/cb"]), "client_name"),
            (ClientSettings(type: .native, name: "A", redirectURIs: ["http://evil.example/cb"]), "redirect_uris"),
            (ClientSettings(type: .native, name: "A", redirectURIs: ["http://127.0.0.1/cb"], scopes: ["nope"]), "scope"),
            (
                ClientSettings(type: .native, name: "A", redirectURIs: ["http://127.0.0.1/cb"], logoURI: "http://x/l.png"),
                "logo_uri"
            ),
            (
                ClientSettings(type: .web, name: "A", redirectURIs: ["https://a.example/cb"], allowImplicit: true),
                "allow_implicit"
            ),
            (ClientSettings(type: .native, name: "A", redirectURIs: ["http://127.0.0.1/cb"], ownerUsername: "nobody"), "owner"),
        ]
        for (settings, field) in cases {
            do {
                _ = try await fixture.admin.registerClient(settings)
                Issue.record("\(field) should have been refused")
            } catch let error as AdministrationError {
                #expect(error.field == field, "\(error)")
            }
        }
        await #expect(throws: AdministrationError.self) {
            var changed = ClientSettings(fixture.native, ownerUsername: nil)
            changed.type = .web
            _ = try await fixture.admin.updateClient(id: fixture.native.id.rawValue, changed)
        }
        let before = try await fixture.store.client(id: fixture.native.id)
        var bad = ClientSettings(fixture.native, ownerUsername: nil)
        bad.redirectURIs = ["http://evil.example/cb"]
        await #expect(throws: AdministrationError.self) {
            try await fixture.admin.updateClient(id: fixture.native.id.rawValue, bad)
        }
        #expect(try await fixture.store.client(id: fixture.native.id) == before, "nothing half-saved")
    }

    @Test("An app's own token lifetimes apply to what it is issued; others keep the server's")
    func perClientLifetimes() async throws {
        let fixture = try await Fixture.make()
        let short = try await fixture.admin.registerClient(
            type: .native, name: "Short-lived", redirectURIs: ["http://127.0.0.1/callback"], scopes: ["profile"],
            accessTokenLifetime: 300, refreshTokenLifetime: 3_600)
        let code = try await fixture.code(client: short.client, scope: "profile")
        let tokens = try await fixture.exchange(code, client: short.client).get()
        #expect(tokens.expiresIn == 300)
        let refresh = try #require(try await fixture.store.token(presented: tokens.refreshToken!))
        #expect(refresh.expiresAt == fixture.clock.now.addingTimeInterval(3_600))
        let ordinary = try await fixture.exchange(try await fixture.code()).get()
        #expect(ordinary.expiresIn == Int(fixture.server.configuration.accessTokenLifetime))

        await #expect(throws: AdministrationError.self) {
            try await fixture.admin.registerClient(
                type: .service, name: "S", redirectURIs: [], scopes: ["profile"], refreshTokenLifetime: 3_600)
        }
        await #expect(throws: AdministrationError.self) {
            try await fixture.admin.registerClient(
                type: .native, name: "N", redirectURIs: ["http://127.0.0.1/cb"], scopes: ["profile"], accessTokenLifetime: 5)
        }
    }

    @Test(
        "Audit events reach the store: the server's after a flush (token.issued left out), admin changes at once with their actor"
    )
    func activity() async throws {
        let fixture = try await Fixture.make()
        let since = fixture.clock.now.addingTimeInterval(-60)
        _ = try await fixture.exchange(try await fixture.code()).get()
        #expect(
            try await fixture.store.auditEvents(AuditQuery(since: since, event: "login.succeeded")).isEmpty, "not flushed yet")
        try await fixture.server.flushAuditEvents()
        let stored = try await fixture.store.auditEvents(AuditQuery(since: since))
        #expect(stored.contains { $0.event == "login.succeeded" && $0.userID == fixture.alice.id.rawValue })
        #expect(stored.contains { $0.event == "consent.granted" && $0.clientID == fixture.native.id.rawValue })
        #expect(!stored.contains { $0.event == "token.issued" })

        try await fixture.admin.acting(as: fixture.alice).setDisabled(username: "bob", true)
        let disabled = try await fixture.store.auditEvents(AuditQuery(since: since, event: "user.disabled"))
        #expect(disabled.map(\.actor) == [fixture.alice.id.rawValue])
        #expect(disabled.map(\.userID) == [fixture.bob.id.rawValue])
        #expect(
            try await fixture.store.auditEvents(AuditQuery(since: since, event: "client.registered")).allSatisfy {
                $0.actor == "cli"
            })
    }
}
