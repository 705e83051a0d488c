import Crypto
import Foundation
import JWTKit
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

func redirectError(_ step: AuthorizationStep) -> String? {
    guard case .redirect(let location) = step else { return nil }
    return Fixture.parameter("error", in: location)
}

@Suite("OpenID Connect provider")
struct OpenIDConnectTests {
    @Test(
        "openid gives an ID token that verifies through the key set, with the claims of Core §2",
        arguments: SigningAlgorithm.allCases)
    func idToken(algorithm: SigningAlgorithm) async throws {
        let fixture = try await Fixture.make()
        let rp = try await RelyingParty.make(fixture, algorithm: algorithm)
        let session = try await fixture.signedInSession()
        let response = try await rp.tokens([("nonce", "n-0S6_WzA2Mj")], session: session)
        let idToken = try #require(response.idToken)
        #expect(JWSHeader(idToken)?.alg == algorithm.rawValue)
        let claims = try await rp.verify(idToken).get()
        #expect(claims.iss == Fixture.issuer)
        #expect(claims.sub == fixture.alice.id.rawValue)
        #expect(claims.aud == rp.client.id.rawValue)
        #expect(claims.nonce == "n-0S6_WzA2Mj")
        #expect(claims.authTime == Int(session.createdAt.timeIntervalSince1970))
        #expect(claims.exp - claims.iat == 3_600)
        #expect(claims.atHash == IDTokenClaims.halfHash(of: response.accessToken))
        #expect(claims.amr == ["pwd"])
        // Without openid, no ID token.
        let plain = try await fixture.exchange(try await fixture.code(scope: "profile")).get()
        #expect(plain.idToken == nil)
    }

    @Test("A refresh returns a new ID token with the same sub and auth_time, and no nonce (Core §12.2)")
    func refresh() async throws {
        let fixture = try await Fixture.make()
        let rp = try await RelyingParty.make(fixture)
        let first = try await rp.tokens([("nonce", "abc")], session: try await fixture.signedInSession())
        let original = try await rp.verify(try #require(first.idToken)).get()
        fixture.clock.advance(by: 600)
        let refreshed = try await fixture.refresh(try #require(first.refreshToken), client: rp.client).get()
        let claims = try await rp.verify(try #require(refreshed.idToken)).get()
        #expect(claims.sub == original.sub && claims.authTime == original.authTime)
        #expect(claims.iat == original.iat + 600)
        #expect(claims.nonce == nil)
        #expect(claims.atHash == IDTokenClaims.halfHash(of: refreshed.accessToken))
    }

    @Test("prompt=none answers by redirect: login_required, consent_required, or a code with no page")
    func promptNone() async throws {
        let fixture = try await Fixture.make()
        let rp = try await RelyingParty.make(fixture)
        let anonymous = try await fixture.server.sessions.session(cookie: nil).session
        #expect(redirectError(try await rp.authorize([("prompt", "none")], session: anonymous)) == "login_required")
        let session = try await fixture.signedInSession()
        #expect(redirectError(try await rp.authorize([("prompt", "none")], session: session)) == "consent_required")
        _ = try await rp.tokens(session: session)
        let step = try await rp.authorize([("prompt", "none")], session: session)
        guard case .redirect(let location) = step else { Issue.record("expected a redirect"); return }
        #expect(Fixture.parameter("code", in: location) != nil)
        #expect(redirectError(try await rp.authorize([("prompt", "none login")], session: session)) == "invalid_request")
    }

    @Test("prompt=login and an old sign-in under max_age ask for the password again; prompt=consent asks again")
    func promptLoginMaxAgeConsent() async throws {
        let fixture = try await Fixture.make()
        let rp = try await RelyingParty.make(fixture)
        let session = try await fixture.signedInSession()
        _ = try await rp.tokens(session: session)
        guard case .signIn(_, _, let again, _) = try await rp.authorize([("prompt", "login")], session: session) else {
            Issue.record("prompt=login should ask to sign in")
            return
        }
        #expect(again)
        fixture.clock.advance(by: 120)
        guard case .signIn = try await rp.authorize([("max_age", "60")], session: session) else {
            Issue.record("an older sign-in than max_age should ask to sign in")
            return
        }
        guard case .redirect = try await rp.authorize([("max_age", "10000")], session: session) else {
            Issue.record("a recent enough sign-in should go through")
            return
        }
        // After signing in again the pending request continues, with the new auth_time.
        let fresh = try await fixture.signedInSession()
        let response = try await rp.tokens([("max_age", "1")], session: fresh)
        #expect(try await rp.verify(try #require(response.idToken)).get().authTime == Int(fresh.createdAt.timeIntervalSince1970))
        guard
            case .consent = try await fixture.server.authorization.authorize(rp.request([("prompt", "consent")]), session: fresh)
        else {
            Issue.record("prompt=consent should show the consent page")
            return
        }
        guard case .redirect(let location) = try await rp.authorize([("max_age", "x")], session: fresh) else { return }
        #expect(Fixture.parameter("error", in: location) == "invalid_request")
    }

    @Test(
        "The consent form cannot stand in for the fresh sign-in prompt=login asked for; a hint's user must be the one who signs in"
    )
    func freshSignInHolds() async throws {
        let fixture = try await Fixture.make()
        let rp = try await RelyingParty.make(fixture)
        let session = try await fixture.signedInSession()
        _ = try await rp.tokens(session: session)
        guard case .signIn(let pendingID, _, _, _) = try await rp.authorize([("prompt", "login")], session: session) else {
            Issue.record("prompt=login should ask to sign in")
            return
        }
        let form = FormParameters([
            ("csrf_token", session.csrfToken), ("request", pendingID), ("decision", "allow"), ("scope", "openid"),
        ])
        guard case .signIn = try await fixture.server.authorization.decide(form, session: session) else {
            Issue.record("posting the consent form must not skip the new sign-in")
            return
        }

        let idToken = try #require(try await rp.tokens(session: session).idToken)
        let anonymous = try await fixture.server.sessions.session(cookie: nil).session
        guard case .signIn(let hinted, _, _, _) = try await rp.authorize([("id_token_hint", idToken)], session: anonymous) else {
            Issue.record("expected sign-in")
            return
        }
        // bob signs in instead of the hinted alice: the request ends in login_required.
        fixture.clock.advance(by: 1)
        let form2 = FormParameters([
            ("csrf_token", anonymous.csrfToken), ("request", hinted), ("username", "bob"), ("password", "battery-staple"),
        ])
        guard
            case .signedIn(let bob, _) = try await fixture.server.sessions.signIn(
                form2, session: anonymous, clientAddress: "127.0.0.1")
        else {
            Issue.record("bob should sign in")
            return
        }
        #expect(
            redirectError(try await fixture.server.authorization.resume(pendingID: hinted, session: bob.session))
                == "login_required")
    }

    @Test("Two first keys made at once: the one not replaced signs, so what it signs stays published")
    func firstKeysRace() async throws {
        let fixture = try await Fixture.make()
        let now = fixture.clock.now
        let other = SigningKeyring(store: fixture.store, keyEncryptionKey: Fixture.keyEncryptionKey, signedTokenLifetime: 3_600)
        // Instance B's key activates a moment later but is stored first; A's insert then replaces it.
        _ = try await other.rotate(leadTime: 0.001, at: now)
        _ = try await fixture.server.signingKeys.rotate(leadTime: 0, at: now)
        let keys = try await fixture.store.signingKeys(at: now)
        let unreplaced = Set(keys.filter { $0.publishedUntil == nil }.map(\.kid))
        fixture.clock.advance(by: 1)
        for keyring in [other, fixture.server.signingKeys] {
            for algorithm in SigningAlgorithm.allCases {
                let signer = try await keyring.signer(for: algorithm, at: fixture.clock.now.addingTimeInterval(61))
                #expect(unreplaced.contains(signer.kid))
            }
        }
    }

    @Test("login_hint is carried to the sign-in page; display, locales, acr_values and unknown parameters are ignored")
    func hintsAndIgnored() async throws {
        let fixture = try await Fixture.make()
        let rp = try await RelyingParty.make(fixture)
        let anonymous = try await fixture.server.sessions.session(cookie: nil).session
        guard case .signIn(_, let hint, _, _) = try await rp.authorize([("login_hint", "alice")], session: anonymous) else {
            Issue.record("expected sign-in")
            return
        }
        #expect(hint == "alice")
        let extra = [
            ("display", "popup"), ("ui_locales", "fr-CA fr en"), ("claims_locales", "de"), ("acr_values", "urn:x"),
            ("frobnicate", "1"),
        ]
        let response = try await rp.tokens(extra, session: try await fixture.signedInSession())
        #expect(response.idToken != nil)
    }

    @Test("request and request_uri are refused as unsupported, by redirect")
    func requestObjects() async throws {
        let fixture = try await Fixture.make()
        let rp = try await RelyingParty.make(fixture)
        let session = try await fixture.signedInSession()
        #expect(
            redirectError(try await rp.authorize([("request", "eyJhbGciOiJub25lIn0.e30.")], session: session))
                == "request_not_supported")
        #expect(
            redirectError(try await rp.authorize([("request_uri", "https://rp.example/r")], session: session))
                == "request_uri_not_supported")
    }

    @Test("id_token_hint: ours works; alg none, HS256 keyed with the public key, an unknown kid or another client's are refused")
    func idTokenHint() async throws {
        let fixture = try await Fixture.make()
        let rp = try await RelyingParty.make(fixture)
        let other = try await RelyingParty.make(fixture, name: "Other RP")
        let session = try await fixture.signedInSession()
        let idToken = try #require(try await rp.tokens(session: session).idToken)
        guard case .redirect(let ok) = try await rp.authorize([("id_token_hint", idToken), ("prompt", "none")], session: session)
        else { Issue.record("expected a redirect"); return }
        #expect(Fixture.parameter("code", in: ok) != nil)

        let parts = idToken.split(separator: ".").map(String.init)
        let header = JWSHeader(idToken)!
        func forged(_ header: String, signature: String) -> String {
            Base64URL.encode(Data(header.utf8)) + "." + parts[1] + "." + signature
        }
        let none = forged(#"{"alg":"none","kid":"\#(header.kid!)"}"#, signature: "")
        // HS256 with the RSA public key's JWK as the HMAC secret: the classic confusion attack.
        let keySet = try await fixture.server.signingKeys.publishedKeySet(at: fixture.clock.now)
        let hsHeader = Base64URL.encode(Data(#"{"alg":"HS256","kid":"\#(header.kid!)"}"#.utf8))
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data((hsHeader + "." + parts[1]).utf8), using: SymmetricKey(data: Data(keySet.utf8)))
        let hs256 = hsHeader + "." + parts[1] + "." + Base64URL.encode(Data(mac))
        let unknownKid = forged(#"{"alg":"\#(header.alg)","kid":"not-a-key"}"#, signature: parts[2])
        let othersToken = try #require(try await other.tokens(session: session).idToken)
        for hint in [none, hs256, unknownKid, othersToken] {
            #expect(redirectError(try await rp.authorize([("id_token_hint", hint)], session: session)) == "invalid_request")
        }
        // A hint for another user than the one signed in asks for sign-in.
        let bob = try await fixture.signedInSession(as: "bob")
        guard case .signIn = try await rp.authorize([("id_token_hint", idToken)], session: bob) else {
            Issue.record("a hint for alice in bob's session should ask to sign in")
            return
        }
        #expect(
            redirectError(try await rp.authorize([("id_token_hint", idToken), ("prompt", "none")], session: bob))
                == "login_required")
    }

    @Test("/userinfo gives sub always and the claims of each granted scope; the form body works, never beside the header")
    func userInfo() async throws {
        let fixture = try await Fixture.make()
        _ = try await fixture.admin.setProfile(
            username: "alice", displayName: nil, email: "alice@example.com", emailVerified: true)
        let rp = try await RelyingParty.make(fixture)
        let session = try await fixture.signedInSession()
        let openidOnly = try await rp.tokens(scope: "openid", session: session)
        let bare = try await fixture.server.userInfo.claims(authorization: "Bearer " + openidOnly.accessToken).get()
        #expect(bare == UserInfo(sub: fixture.alice.id.rawValue))
        let all = try await rp.tokens(scope: "openid email profile", session: session)
        let info = try await fixture.server.userInfo.claims(authorization: nil, formToken: all.accessToken).get()
        #expect(info.email == "alice@example.com" && info.emailVerified == true)
        #expect(info.name == "Alice Liddell" && info.preferredUsername == "alice" && info.updatedAt != nil)
    }

    @Test("Discovery lists what the provider does, and the RFC 8414 document is the same one")
    func discovery() async throws {
        let fixture = try await Fixture.make()
        let metadata = try await fixture.server.metadata()
        #expect(metadata.jwksURI == Fixture.issuer + "/oauth2/jwks")
        #expect(metadata.endSessionEndpoint == Fixture.issuer + "/oauth2/logout")
        #expect(metadata.subjectTypesSupported == ["public"])
        #expect(metadata.idTokenSigningAlgValuesSupported == ["RS256", "ES256"])
        #expect(metadata.scopesSupported.contains("openid") && metadata.scopesSupported.contains("email"))
        #expect(metadata.requestParameterSupported == false && metadata.requestURIParameterSupported == false)
    }

    @Test("Rotation publishes the new key at once and signs with it only after the lead time; the old one stays published")
    func rotation() async throws {
        let fixture = try await Fixture.make()
        let rp = try await RelyingParty.make(fixture)
        let session = try await fixture.signedInSession()
        let before = JWSHeader(try #require(try await rp.tokens(session: session).idToken))!.kid!
        let added = try await fixture.server.signingKeys.rotate(leadTime: 3_600, at: fixture.clock.now)
        let newRS256 = try #require(added.first { $0.algorithm == .rs256 }).kid
        let published = try await fixture.server.signingKeys.publishedKeySet(at: fixture.clock.now)
        #expect(published.contains(newRS256) && published.contains(before))
        #expect(JWSHeader(try #require(try await rp.tokens(session: session).idToken))!.kid == before)
        fixture.clock.advance(by: 3_601)
        let after = try #require(try await rp.tokens(session: try await fixture.signedInSession()).idToken)
        #expect(JWSHeader(after)?.kid == newRS256)
        #expect(try await fixture.server.signingKeys.publishedKeySet(at: fixture.clock.now).contains(before))
        // Once every token the old key signed has expired (ID tokens, and JWT access tokens of
        // up to a day), it is no longer published.
        fixture.clock.advance(by: 3_600)
        #expect(try await fixture.server.signingKeys.publishedKeySet(at: fixture.clock.now).contains(before))
        fixture.clock.advance(by: TimeInterval(ProtectedResource.maximumJWTLifetime) - 3_600 + 61)
        #expect(try await !fixture.server.signingKeys.publishedKeySet(at: fixture.clock.now).contains(before))
    }

    @Test("Keys sealed under one key-encryption key cannot be used with another, and the store holds no private key")
    func sealing() async throws {
        let fixture = try await Fixture.make()
        try await fixture.server.signingKeys.ensureKeys(at: fixture.clock.now)
        let records = try await fixture.store.signingKeys(at: fixture.clock.now)
        #expect(records.count == 2)
        for record in records { #expect(!record.sealedPrivateKey.contains("PRIVATE") && !record.publicJWK.contains("\"d\"")) }
        let stranger = SigningKeyring(
            store: fixture.store, keyEncryptionKey: KeyEncryptionKey.generate().key, signedTokenLifetime: 3_600)
        await #expect(throws: SigningKeyError.self) {
            try await stranger.signer(for: .es256, at: fixture.clock.now)
        }
        await #expect(throws: SigningKeyError.self, "a rotation with another key-encryption key is refused") {
            try await stranger.rotate(leadTime: 0, at: fixture.clock.now)
        }
        #expect(try await fixture.store.signingKeys(at: fixture.clock.now).count == 2)
    }

    @Test("The hand-written ID token JSON decodes to the same claims, whatever the characters")
    func claimsJSON() throws {
        for claims in [
            IDTokenClaims(
                iss: "https://i.example", sub: "u\"1\\", aud: "c", exp: 2, iat: 1, authTime: 1, nonce: "n\u{1}é",
                atHash: "h", amr: ["pwd"]),
            IDTokenClaims(iss: "i", sub: "s", aud: "a", exp: 1, iat: 1, authTime: nil, nonce: nil, atHash: nil, amr: nil),
        ] {
            #expect(try JSONDecoder().decode(IDTokenClaims.self, from: Data(claims.jsonBody.utf8)) == claims)
        }
    }

    @Test("RP-initiated logout: a matching hint ends the session and returns with state; else a question or an error page")
    func logout() async throws {
        let fixture = try await Fixture.make()
        let rp = try await RelyingParty.make(fixture)
        let (session, cookie) = try await fixture.signedIn()
        let idToken = try #require(try await rp.tokens(session: session).idToken)

        let unregistered = FormParameters([("id_token_hint", idToken), ("post_logout_redirect_uri", "https://evil.example/")])
        guard case .errorPage = try await fixture.server.logout.logout(unregistered, session: session) else {
            Issue.record("an unregistered post_logout_redirect_uri must get an error page")
            return
        }
        guard case .confirm = try await fixture.server.logout.logout(FormParameters([]), session: session) else {
            Issue.record("without a hint the user must be asked")
            return
        }
        let forgedHint = FormParameters([
            ("id_token_hint", idToken + "x"), ("post_logout_redirect_uri", RelyingParty.afterLogout),
        ])
        guard case .errorPage = try await fixture.server.logout.logout(forgedHint, session: session) else {
            Issue.record("a bad hint must get an error page")
            return
        }
        #expect(
            try await fixture.server.sessions.session(cookie: cookie).session.userID != nil, "nothing so far ended the session")

        let good = FormParameters([
            ("id_token_hint", idToken), ("post_logout_redirect_uri", RelyingParty.afterLogout), ("state", "bye"),
        ])
        guard case .signedOut(let redirect, _, let ended) = try await fixture.server.logout.logout(good, session: session), ended
        else {
            Issue.record("expected to be signed out")
            return
        }
        #expect(redirect == RelyingParty.afterLogout + "?state=bye")
        #expect(try await fixture.server.sessions.session(cookie: cookie).session.userID == nil)
    }
}
