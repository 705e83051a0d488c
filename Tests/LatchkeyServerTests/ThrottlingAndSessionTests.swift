import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("Sign-in and client-secret throttling, session lifetimes and sign-out")
struct ThrottlingAndSessionTests {
    func attempt(
        _ fixture: Fixture, _ username: String, _ password: String, from address: String = "192.0.2.1"
    ) async throws -> SignInResult {
        let session = try await fixture.server.sessions.session(cookie: nil).session
        return try await fixture.server.sessions.signIn(
            FormParameters([("csrf_token", session.csrfToken), ("username", username), ("password", password)]),
            session: session, clientAddress: address)
    }

    @Test("T62 After the account's limit even the right password is refused until the window ends; bob is unaffected")
    func accountThrottle() async throws {
        let fixture = try await Fixture.make { $0.signInAttemptsPerAccount = 3 }
        for _ in 0..<3 {
            guard case .failed = try await attempt(fixture, "alice", "wrong-password") else {
                Issue.record("expected failure"); return
            }
        }
        guard case .throttled(_, let retryAfter) = try await attempt(fixture, "alice", Fixture.password) else {
            Issue.record("expected the right password to be refused while throttled"); return
        }
        #expect(retryAfter > 0 && retryAfter <= 900)
        guard case .signedIn = try await attempt(fixture, "bob", "battery-staple") else {
            Issue.record("bob was throttled"); return
        }
        // Another address does not help: the account is what is throttled.
        guard case .throttled = try await attempt(fixture, "alice", Fixture.password, from: "198.51.100.7") else {
            Issue.record("expected the account throttle from another address"); return
        }
        fixture.clock.advance(by: 901)
        guard case .signedIn = try await attempt(fixture, "alice", Fixture.password) else {
            Issue.record("expected sign-in"); return
        }
    }

    @Test("T62 An unknown user is throttled exactly like a known one, so throttling reveals no usernames")
    func unknownUserThrottle() async throws {
        let fixture = try await Fixture.make { $0.signInAttemptsPerAccount = 2 }
        for username in ["alice", "nobody"] {
            for _ in 0..<2 { _ = try await attempt(fixture, username, "wrong-password") }
            guard case .throttled = try await attempt(fixture, username, "wrong-password") else {
                Issue.record("expected \(username) throttled"); return
            }
        }
    }

    @Test("T62 Many usernames from one address hit the per-address limit; other addresses are unaffected")
    func addressThrottle() async throws {
        let fixture = try await Fixture.make { $0.signInAttemptsPerAddress = 4 }
        for index in 0..<4 { _ = try await attempt(fixture, "user\(index)", "wrong-password") }
        guard case .throttled = try await attempt(fixture, "alice", Fixture.password) else {
            Issue.record("expected the address throttled"); return
        }
        guard case .signedIn = try await attempt(fixture, "alice", Fixture.password, from: "198.51.100.7") else {
            Issue.record("another address was throttled"); return
        }
    }

    @Test("RV20 An anonymous session ends and is purged once it goes unused for the idle timeout; a used one lives on")
    func anonymousSessionsArePurgedByIdleTime() async throws {
        let fixture = try await Fixture.make()
        let idle = fixture.server.configuration.sessionIdleTimeout
        let visitor = try await fixture.server.sessions.session(cookie: nil)
        #expect(visitor.session.expiresAt == fixture.clock.now.addingTimeInterval(idle))
        let regular = try await fixture.server.sessions.session(cookie: nil)
        fixture.clock.advance(by: idle - 60)
        _ = try await fixture.server.sessions.session(cookie: regular.newCookie)  // used: its end moves on
        fixture.clock.advance(by: 120)
        _ = try await fixture.server.purgeExpired()
        #expect(try await fixture.store.session(idHash: visitor.session.idHash) == nil, "purged by idle time")
        #expect(try await fixture.store.session(idHash: regular.session.idHash) != nil)
        // A session made for a HEAD request is not kept at all.
        let head = try await fixture.server.sessions.session(cookie: nil, store: false)
        #expect(head.newCookie == nil)
        #expect(try await fixture.store.session(idHash: head.session.idHash) == nil)
    }

    @Test("A successful sign-in clears the account's count")
    func successClears() async throws {
        let fixture = try await Fixture.make { $0.signInAttemptsPerAccount = 3 }
        for _ in 0..<2 { _ = try await attempt(fixture, "alice", "wrong-password") }
        guard case .signedIn = try await attempt(fixture, "alice", Fixture.password) else {
            Issue.record("expected sign-in"); return
        }
        for _ in 0..<2 { _ = try await attempt(fixture, "alice", "wrong-password") }
        guard case .signedIn = try await attempt(fixture, "alice", Fixture.password) else {
            Issue.record("throttled too soon"); return
        }
    }

    @Test("T41 Client-secret guessing is throttled per client id: 429 even with the right secret, others unaffected")
    func clientSecretThrottle() async throws {
        let fixture = try await Fixture.make { $0.clientAuthenticationAttempts = 3 }
        let request = [("grant_type", "client_credentials"), ("scope", "activity")]
        let wrong = "Basic " + Data("\(fixture.service.id):wrong".utf8).base64EncodedString()
        for _ in 0..<3 { #expect(await fixture.token(request, authorization: wrong).failure?.error.code == .invalidClient) }
        let refused = await fixture.token(request, authorization: fixture.serviceBasic).failure
        #expect(refused?.error.code == .temporarilyUnavailable)
        #expect((refused?.retryAfter ?? 0) > 0)
        // The web client is another client id.
        let webCode = try await fixture.code(client: fixture.web, scope: "profile", redirectURI: "https://web.example/cb")
        let exchange = [
            ("grant_type", "authorization_code"), ("code", webCode), ("redirect_uri", "https://web.example/cb"),
            ("code_verifier", Fixture.verifier.value),
        ]
        #expect(await fixture.token(exchange, authorization: fixture.webBasic).value != nil)
        fixture.clock.advance(by: 61)
        #expect(await fixture.token(request, authorization: fixture.serviceBasic).value != nil)
    }

    @Test("T63 A session ends after the idle timeout, and at its absolute lifetime however active")
    func sessionLifetimes() async throws {
        let fixture = try await Fixture.make {
            $0.sessionIdleTimeout = 600
            $0.sessionLifetime = 1_500
        }
        let cookie = try await fixture.signedIn().cookie
        // Active every 5 minutes: still signed in until the absolute lifetime.
        for _ in 0..<4 {
            fixture.clock.advance(by: 300)
            #expect(try await fixture.server.sessions.session(cookie: cookie).session.userID == fixture.alice.id)
        }
        fixture.clock.advance(by: 300)  // 1,500 s after sign-in
        #expect(try await fixture.server.sessions.session(cookie: cookie).session.userID == nil, "absolute lifetime")

        let idle = try await fixture.signedIn().cookie
        fixture.clock.advance(by: 599)
        #expect(try await fixture.server.sessions.session(cookie: idle).session.userID == fixture.alice.id)
        fixture.clock.advance(by: 600)
        #expect(try await fixture.server.sessions.session(cookie: idle).session.userID == nil, "idle timeout")
    }

    @Test("T63 Sign-out needs the CSRF token and ends the session")
    func signOut() async throws {
        let fixture = try await Fixture.make()
        let (session, cookie) = try await fixture.signedIn()
        #expect(try await !fixture.server.sessions.signOut(FormParameters([("csrf_token", "forged")]), session: session))
        #expect(try await fixture.server.sessions.session(cookie: cookie).session.userID == fixture.alice.id)
        #expect(try await fixture.server.sessions.signOut(FormParameters([("csrf_token", session.csrfToken)]), session: session))
        #expect(try await fixture.server.sessions.session(cookie: cookie).session.userID == nil)
    }
}
