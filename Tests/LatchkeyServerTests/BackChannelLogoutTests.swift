import Foundation
import JWTKit
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Synchronization
import Testing

/// OpenID Connect Back-Channel Logout 1.0: `sid` in ID tokens, logouts queued with the ending of
/// a session or of the user's access, logout tokens and their delivery (docs/threat-model.md BL1–BL4).
@Suite("Back-channel logout")
struct BackChannelLogoutTests {
    static let logoutURI = "https://rp.example/backchannel-logout"
    static let redirect = "https://rp.example/cb"

    /// The app's end of the back channel: answers `status` (or fails to connect) and keeps what it was sent.
    final class Receiver: BackChannelNotifying {
        let received = Mutex<[(token: String, url: URL)]>([])
        let status = Mutex<Int?>(200)

        func postLogoutToken(_ token: String, to url: URL) async throws(FetchRefusal) -> Int {
            guard let status = status.withLock({ $0 }) else { throw FetchRefusal("the connection failed") }
            received.withLock { $0.append((token, url)) }
            return status
        }

        var tokens: [String] { received.withLock { $0.map(\.token) } }
    }

    struct LogoutClaims: JWTPayload {
        var iss: String
        var sub: String?
        var aud: String
        var iat: Int
        var exp: Int
        var jti: String
        var sid: String?
        var nonce: String?
        var events: [String: [String: String]]
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    struct Setup {
        var fixture: Fixture
        var receiver: Receiver
        var app: Client
        var basic: String
    }

    func setup(logoutURI: String? = logoutURI) async throws -> Setup {
        let receiver = Receiver()
        let fixture = try await Fixture.make(backChannelNotifier: receiver)
        let registered = try await fixture.admin.registerClient(
            type: .web, name: "Web RP", redirectURIs: [Self.redirect], scopes: ["openid", "profile"],
            idTokenSigningAlgorithm: .es256, backchannelLogoutURI: logoutURI)
        let basic = "Basic " + Data("\(registered.client.id):\(registered.secret ?? "")".utf8).base64EncodedString()
        return Setup(fixture: fixture, receiver: receiver, app: registered.client, basic: basic)
    }

    /// The app's tokens for a sign-in in `session`.
    func signIn(_ setup: Setup, session: BrowserSession) async throws -> TokenResponse {
        let code = try await setup.fixture.code(
            client: setup.app, scope: "openid profile", redirectURI: Self.redirect, session: session)
        return try await setup.fixture.token(
            [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", Self.redirect),
                ("code_verifier", Fixture.verifier.value),
            ], authorization: setup.basic
        ).get()
    }

    func verify<Payload: JWTPayload>(_ fixture: Fixture, _ token: String, as type: Payload.Type) async throws -> Payload {
        let keySet = try await fixture.server.signingKeys.publishedKeySet(at: fixture.clock.now)
        return try await PublicKeySet.parse(Data(keySet.utf8)).verify(token, as: type, allowed: ["RS256", "ES256"]).get()
    }

    @Test("ID tokens carry the session's sid, on refresh too; the metadata offers back-channel logout with sessions")
    func sidInIDTokens() async throws {
        let setup = try await setup()
        let session = try await setup.fixture.signedInSession()
        let tokens = try await signIn(setup, session: session)
        let claims = try await verify(setup.fixture, try #require(tokens.idToken), as: IDTokenClaims.self)
        #expect(claims.sid == session.sid && session.sid.count == 32 && !session.idHash.rawValue.contains(session.sid))
        let refreshed = try await setup.fixture.token(
            [("grant_type", "refresh_token"), ("refresh_token", try #require(tokens.refreshToken))], authorization: setup.basic
        ).get()
        #expect(try await verify(setup.fixture, try #require(refreshed.idToken), as: IDTokenClaims.self).sid == session.sid)
        let metadata = try await setup.fixture.server.metadata()
        #expect(metadata.backchannelLogoutSupported == true && metadata.backchannelLogoutSessionSupported == true)
        let without = try await Fixture.make()
        #expect(try await without.server.metadata().backchannelLogoutSupported == nil)
    }

    @Test("BL1 Signing out queues one logout for the app, whose token names the session and is delivered once")
    func signOut() async throws {
        let setup = try await setup()
        let fixture = setup.fixture
        let session = try await fixture.signedInSession()
        _ = try await signIn(setup, session: session)
        _ = try await signIn(setup, session: session)  // two grants from one session: one logout
        let other = try await fixture.signedInSession()
        _ = try await signIn(setup, session: other)
        #expect(try await fixture.server.sessions.signOut(FormParameters([("csrf_token", session.csrfToken)]), session: session))
        let queued = try await fixture.store.pendingLogouts()
        #expect(queued.count == 1 && queued.first?.sid == session.sid && queued.first?.clientID == setup.app.id)
        let logouts = try #require(fixture.server.backChannelLogout)
        let handled = try await logouts.deliverDue()
        #expect(handled.map(\.1) == [.delivered])
        #expect(try await fixture.store.pendingLogouts().isEmpty && setup.receiver.tokens.count == 1)
        #expect(setup.receiver.received.withLock { $0.first?.url.absoluteString } == Self.logoutURI)

        let token = try #require(setup.receiver.tokens.first)
        #expect(JWSHeader(token)?.typ == "logout+jwt" && JWSHeader(token)?.alg == "ES256")
        let claims = try await verify(fixture, token, as: LogoutClaims.self)
        #expect(claims.iss == Fixture.issuer && claims.aud == setup.app.id.rawValue && claims.sub == fixture.alice.id.rawValue)
        #expect(claims.sid == session.sid && claims.nonce == nil && claims.exp - claims.iat == 120)
        #expect(claims.events.keys.sorted() == ["http://schemas.openid.net/event/backchannel-logout"])
        // Signing out again, or a session that never signed in to the app, queues nothing.
        _ = try await fixture.server.sessions.signOut(FormParameters([("csrf_token", session.csrfToken)]), session: session)
        #expect(try await fixture.store.pendingLogouts().isEmpty)
    }

    @Test("BL2 Disabling the user, or a new password, queues a logout per app and session its grants came from")
    func userWide() async throws {
        let setup = try await setup()
        let fixture = setup.fixture
        let first = try await fixture.signedInSession()
        let second = try await fixture.signedInSession()
        _ = try await signIn(setup, session: first)
        _ = try await signIn(setup, session: second)
        try await fixture.admin.setDisabled(username: "alice", true)
        let queued = try await fixture.store.pendingLogouts()
        #expect(Set(queued.compactMap(\.sid)) == [first.sid, second.sid] && queued.count == 2)
        #expect(queued.allSatisfy { $0.userID == fixture.alice.id })
        _ = try await fixture.server.backChannelLogout?.deliverDue()
        let claims = try await verify(fixture, try #require(setup.receiver.tokens.first), as: LogoutClaims.self)
        #expect(claims.sub == fixture.alice.id.rawValue && [first.sid, second.sid].contains(claims.sid ?? ""))

        try await fixture.admin.setDisabled(username: "alice", false)
        _ = try await signIn(setup, session: try await fixture.signedInSession())
        try await fixture.admin.setPassword(username: "alice", password: "a-new-password-entirely")
        #expect(try await fixture.store.pendingLogouts().count == 1)
    }

    @Test("BL1 A new cookie for the same person keeps the sid; another person signing in ends the first one's session")
    func replacedSessions() async throws {
        let setup = try await setup()
        let fixture = setup.fixture
        let (session, _) = try await fixture.signedIn()
        _ = try await signIn(setup, session: session)
        // alice signs in again in the same browser (prompt=login, a step-up): a new cookie, the same sid.
        let again = FormParameters([
            ("csrf_token", session.csrfToken), ("username", "alice"), ("password", Fixture.password),
        ])
        guard
            case .signedIn(let renewed, _) = try await fixture.server.sessions.signIn(
                again, session: session, clientAddress: "127.0.0.1")
        else { throw FixtureError("sign-in failed") }
        #expect(renewed.session.idHash != session.idHash && renewed.session.sid == session.sid)
        #expect(try await fixture.store.session(idHash: renewed.session.idHash)?.sid == session.sid)
        #expect(try await fixture.store.pendingLogouts().isEmpty)
        // A code approved in that session and not redeemed dies with the sign-out.
        let code = try await fixture.code(
            client: setup.app, scope: "openid profile", redirectURI: Self.redirect, session: renewed.session)
        // bob signs in over it: alice's session ends there, and her app is told.
        let bob = FormParameters([
            ("csrf_token", renewed.session.csrfToken), ("username", "bob"), ("password", "battery-staple"),
        ])
        guard
            case .signedIn(let bobs, _) = try await fixture.server.sessions.signIn(
                bob, session: renewed.session, clientAddress: "127.0.0.1")
        else { throw FixtureError("sign-in failed") }
        #expect(bobs.session.sid != session.sid)
        #expect(try await fixture.store.pendingLogouts().map(\.sid) == [session.sid])
        _ = code
        // Signing out with an unredeemed code: the code is gone.
        let carol = try await fixture.signedInSession()
        let pending = try await fixture.code(
            client: setup.app, scope: "openid profile", redirectURI: Self.redirect, session: carol)
        _ = try await fixture.server.sessions.signOut(FormParameters([("csrf_token", carol.csrfToken)]), session: carol)
        let redeemed = await fixture.token(
            [
                ("grant_type", "authorization_code"), ("code", pending), ("redirect_uri", Self.redirect),
                ("code_verifier", Fixture.verifier.value),
            ], authorization: setup.basic)
        #expect(redeemed.failure?.error.code == .invalidGrant)
    }

    @Test("BL4 An app that cannot be reached is tried again later; one that refuses the token is given up")
    func retries() async throws {
        let setup = try await setup()
        let fixture = setup.fixture
        let session = try await fixture.signedInSession()
        _ = try await signIn(setup, session: session)
        _ = try await fixture.server.sessions.signOut(FormParameters([("csrf_token", session.csrfToken)]), session: session)
        let logouts = try #require(fixture.server.backChannelLogout)
        setup.receiver.status.withLock { $0 = nil }
        #expect(try await logouts.deliverDue().map(\.1) == [.tryAgain("the connection failed")])
        #expect(try await logouts.deliverDue().isEmpty, "not due again before its delay")
        #expect(try await fixture.store.pendingLogouts().first?.lastError == "the connection failed")
        fixture.clock.advance(by: 11)
        setup.receiver.status.withLock { $0 = 503 }
        #expect(try await logouts.deliverDue().map(\.1) == [.tryAgain("The app answered 503.")])
        fixture.clock.advance(by: 21)
        setup.receiver.status.withLock { $0 = 200 }
        #expect(try await logouts.deliverDue().map(\.1) == [.delivered])

        let second = try await fixture.signedInSession()
        _ = try await signIn(setup, session: second)
        _ = try await fixture.server.sessions.signOut(FormParameters([("csrf_token", second.csrfToken)]), session: second)
        setup.receiver.status.withLock { $0 = 400 }
        #expect(try await logouts.deliverDue().map(\.1) == [.gaveUp("The app answered 400.")])
        #expect(try await fixture.store.pendingLogouts().isEmpty)
    }

    @Test("BL3 Only a web app registers an https back-channel URI; a logout token is never taken as an ID token")
    func registrationAndConfusion() async throws {
        let setup = try await setup()
        let admin = setup.fixture.admin
        for (type, uri) in [
            (ClientType.native, Self.logoutURI), (.browser, Self.logoutURI), (.service, Self.logoutURI),
            (.web, "http://rp.example/logout"), (.web, "https://rp.example/logout#frag"), (.web, "not a url"),
        ] {
            await #expect(throws: AdministrationError.self) {
                try await admin.registerClient(
                    type: type, name: "Bad", redirectURIs: type == .service ? [] : [Self.redirect], scopes: ["profile"],
                    backchannelLogoutURI: uri)
            }
        }
        // A logout token offered where an ID token is expected, the hint of RP-initiated logout,
        // is refused as no ID token of this server's.
        let session = try await setup.fixture.signedInSession()
        _ = try await signIn(setup, session: session)
        _ = try await setup.fixture.server.sessions.signOut(
            FormParameters([("csrf_token", session.csrfToken)]), session: session)
        _ = try await setup.fixture.server.backChannelLogout?.deliverDue()
        let token = try #require(setup.receiver.tokens.first)
        let browser = try await setup.fixture.signedInSession()
        let outcome = try await setup.fixture.server.logout.logout(
            FormParameters([("id_token_hint", token)]), session: browser)
        guard case .errorPage = outcome else {
            Issue.record("a logout token was taken as an id_token_hint: \(outcome)")
            return
        }
    }
}
