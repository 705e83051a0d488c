import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Where two features meet (docs/threat-model.md, section W): the cases an outside review found
/// that the features' own tests did not.
@Suite("Seams: registration updates, logout, ID-token hints and the consent form")
struct SeamTests {
    @Test("RV8 An RFC 7592 update that moves a redirect or widens the scope drops the first-party trust an administrator gave")
    func registrationUpdateDropsTrust() async throws {
        let fixture = try await Fixture.make { $0.dynamicRegistration.mode = .open }
        let answer = try await fixture.server.registration.register(
            Array(DynamicRegistrationTests.native.utf8), authorization: nil, clientAddress: "192.0.2.7")
        let json = try #require(answer.json)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let id = try #require(object["client_id"] as? String)
        let token = "Bearer " + (try #require(object["registration_access_token"] as? String))
        func trust() async throws {
            let client = try #require(try await fixture.store.client(id: ClientID(rawValue: id)))
            var settings = ClientSettings(client, ownerUsername: nil)
            settings.firstParty = true
            _ = try await fixture.admin.updateClient(id: id, settings)
        }
        func update(_ redirect: String, scope: String) async throws -> Bool {
            let body = #"{"client_id":"\#(id)","redirect_uris":["\#(redirect)"],"scope":"\#(scope)"}"#
            let answer = try await fixture.server.registration.updateRegistration(
                clientID: id, Array(body.utf8), authorization: token)
            #expect(answer.status == 200)
            return try #require(try await fixture.store.client(id: ClientID(rawValue: id))).firstParty
        }
        try await trust()
        // A new name, the same redirect and no more scope: the trust stays.
        #expect(try await update("http://127.0.0.1:33418/callback", scope: "activity"))
        #expect(try await !update("http://127.0.0.1:4444/elsewhere", scope: "activity"), "a moved redirect")
        try await trust()
        #expect(try await !update("http://127.0.0.1:4444/elsewhere", scope: "activity sleep"), "a wider scope")
    }

    @Test("RV10 A signed-out browser is redirected after logout only with an id_token_hint, never on a bare link")
    func logoutRedirectNeedsHint() async throws {
        let fixture = try await Fixture.make()
        let rp = try await RelyingParty.make(fixture)
        let idToken = try #require(try await rp.tokens(session: try await fixture.signedInSession()).idToken)
        let signedOut = try await fixture.server.sessions.session(cookie: nil).session
        let bare = FormParameters([
            ("client_id", rp.client.id.rawValue), ("post_logout_redirect_uri", RelyingParty.afterLogout),
        ])
        guard case .signedOut(let redirect, _, false) = try await fixture.server.logout.logout(bare, session: signedOut) else {
            Issue.record("a signed-out browser gets the signed-out page")
            return
        }
        #expect(redirect == nil, "no redirect without a hint")
        let hinted = FormParameters([
            ("id_token_hint", idToken), ("post_logout_redirect_uri", RelyingParty.afterLogout), ("state", "s"),
        ])
        guard case .signedOut(let back, _, _) = try await fixture.server.logout.logout(hinted, session: signedOut) else {
            Issue.record("a hinted logout answers signed out")
            return
        }
        #expect(back == RelyingParty.afterLogout + "?state=s")

        // A hint proves only that someone once signed in to the app: for a personal app, whose
        // owner chose its URIs, a signed-out browser is not sent there even with one.
        let owned = try await fixture.admin.registerClient(
            type: .native, name: "Alice's page", redirectURIs: ["http://127.0.0.1/callback"], scopes: ["openid", "profile"],
            ownerUsername: "alice", postLogoutRedirectURIs: ["https://alice.example/anywhere"])
        let code = try await fixture.code(client: owned.client, scope: "openid profile")
        let ownedToken = try #require(try await fixture.exchange(code, client: owned.client).get().idToken)
        let lure = FormParameters([
            ("id_token_hint", ownedToken), ("post_logout_redirect_uri", "https://alice.example/anywhere"),
        ])
        guard case .signedOut(let lured, _, _) = try await fixture.server.logout.logout(lure, session: signedOut) else {
            Issue.record("a hinted logout answers signed out")
            return
        }
        #expect(lured == nil, "no redirect to a personal app's URI for a browser that was not signed in")
    }

    @Test("RV12 A token typed at+jwt, signed by the same keys, is no id_token_hint at logout or at the authorization endpoint")
    func accessTokenIsNoHint() async throws {
        let fixture = try await Fixture.make()
        let rp = try await RelyingParty.make(fixture)
        let session = try await fixture.signedInSession()
        // What a JWT access token for a resource whose URI is also a client's id (a client metadata
        // document's URL) would carry: every claim an ID token for that client has.
        let now = Int(fixture.clock.now.timeIntervalSince1970)
        let claims = IDTokenClaims(
            iss: Fixture.issuer, sub: fixture.alice.id.rawValue, aud: rp.client.id.rawValue, exp: now + 600, iat: now,
            authTime: nil, nonce: nil, atHash: nil, amr: nil)
        let signer = try await fixture.server.signingKeys.signer(for: .rs256, at: fixture.clock.now)
        let idToken = try signer.sign(payloadJSON: claims.jsonBody)
        let accessToken = try signer.sign(payloadJSON: claims.jsonBody, type: "at+jwt")
        #expect(redirectError(try await rp.authorize([("id_token_hint", idToken)], session: session)) == nil)
        #expect(redirectError(try await rp.authorize([("id_token_hint", accessToken)], session: session)) == "invalid_request")
        let hint = FormParameters([("id_token_hint", accessToken)])
        guard case .errorPage = try await fixture.server.logout.logout(hint, session: session) else {
            Issue.record("an access token as a logout hint must get an error page")
            return
        }
    }

    @Test("RV13 The consent form posted straight away runs the page's checks: a hint's user, a personal app's owner")
    func consentFormChecks() async throws {
        let fixture = try await Fixture.make()
        // alice's personal app, asked for while signed out; bob signs in and posts the consent form
        // himself instead of following the redirect to the page.
        let anonymous = try await fixture.server.sessions.session(cookie: nil).session
        let request = FormParameters([
            ("response_type", "code"), ("client_id", fixture.personal.id.rawValue),
            ("redirect_uri", "http://127.0.0.1:5000/callback"), ("scope", "profile"),
            ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
        ])
        guard case .signIn(let pendingID, _, _, _) = try await fixture.server.authorization.authorize(request, session: anonymous)
        else {
            Issue.record("expected sign-in")
            return
        }
        let credentials = FormParameters([
            ("csrf_token", anonymous.csrfToken), ("request", pendingID), ("username", "bob"), ("password", "battery-staple"),
        ])
        guard
            case .signedIn(let bob, _) = try await fixture.server.sessions.signIn(
                credentials, session: anonymous, clientAddress: "127.0.0.1")
        else {
            Issue.record("bob should sign in")
            return
        }
        let consent = FormParameters([
            ("csrf_token", bob.session.csrfToken), ("request", pendingID), ("decision", "allow"), ("scope", "profile"),
        ])
        let step = try await fixture.server.authorization.decide(consent, session: bob.session)
        guard case .redirect(let location) = step else {
            Issue.record("expected a redirect, got \(step)")
            return
        }
        #expect(Fixture.parameter("error", in: location) == "access_denied")
        #expect(Fixture.parameter("code", in: location) == nil)
    }
}
