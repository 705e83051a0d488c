import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("OpenID Connect over HTTP")
struct OpenIDHTTPTests {
    @Test("The two discovery documents are one; the key set is served as a JWK Set")
    func discoveryAndKeys() async throws {
        try await withLiveServer { _, browser in
            let openID = try await browser.get("/.well-known/openid-configuration")
            let oauth = try await browser.get("/.well-known/oauth-authorization-server")
            #expect(openID.status == .ok && openID.body == oauth.body)
            let metadata = try openID.json(AuthorizationServerMetadata.self)
            #expect(metadata.jwksURI == Fixture.issuer + "/oauth2/jwks")
            let keys = try await browser.get("/oauth2/jwks")
            #expect(keys.headers[.contentType] == "application/jwk-set+json")
            let set = try await PublicKeySet.parse(Data(keys.body.utf8))
            #expect(Set(set.algorithms.values) == ["RS256", "ES256"])
            #expect(!keys.body.contains("\"d\""), "no private member is ever published")
        }
    }

    @Test("A POSTed authorization request, login_hint on the sign-in page, prompt=login shows it again, userinfo by form body")
    func pages() async throws {
        try await withLiveServer { fixture, browser in
            let rp = try await RelyingParty.make(fixture)
            let request = rp.request([("login_hint", "alice"), ("nonce", "n1")])
            let started = try await browser.post("/oauth2/authorize", form: request.pairs)
            let login = try #require(started.location)
            #expect(login.contains("login_hint=alice"))
            let form = try await browser.get(login)
            #expect(form.body.contains(#"name="username" value="alice""#))
            var page = try await browser.post(
                "/login",
                form: [
                    ("csrf_token", form.field("csrf_token")!), ("request", form.field("request")!), ("username", "alice"),
                    ("password", Fixture.password),
                ])
            page = try await browser.get(page.location!)
            #expect(page.body.contains("Shares: Alice Liddell · alice"))
            page = try await browser.post(
                "/oauth2/authorize",
                form: [
                    ("csrf_token", page.field("csrf_token")!), ("request", page.field("request")!), ("decision", "allow"),
                    ("scope", "openid"), ("scope", "profile"),
                ])
            let code = try #require(page.location.flatMap { Fixture.parameter("code", in: $0) })
            let tokens = try await fixture.exchange(code, client: rp.client, redirectURI: RelyingParty.redirect).get()
            #expect(tokens.idToken != nil)

            let body = try await browser.post("/userinfo", form: [("access_token", tokens.accessToken)])
            #expect(body.status == .ok && body.jsonObject["sub"] as? String == fixture.alice.id.rawValue)
            let both = try await browser.post(
                "/userinfo", form: [("access_token", tokens.accessToken)],
                headers: [.authorization: "Bearer " + tokens.accessToken])
            #expect(both.status == .badRequest)

            // Signed in, prompt=login still shows the sign-in form.
            let again = try await browser.get("/oauth2/authorize?" + rp.request([("prompt", "login")]).encoded)
            let relogin = try await browser.get(try #require(again.location))
            #expect(relogin.status == .ok && relogin.field("csrf_token") != nil)
        }
    }

    @Test("RP-initiated logout ends the session, clears the cookie and returns to the registered URI with state")
    func logout() async throws {
        try await withLiveServer { fixture, browser in
            let rp = try await RelyingParty.make(fixture)
            let form = try await browser.get("/login")
            _ = try await browser.post(
                "/login",
                form: [("csrf_token", form.field("csrf_token")!), ("username", "alice"), ("password", Fixture.password)])
            let cookie = try #require(await browser.cookies["lk_session"])
            let session = try await fixture.server.sessions.session(cookie: cookie).session
            let idToken = try #require(try await rp.tokens(session: session).idToken)
            let evil = try await browser.get(
                "/oauth2/logout?"
                    + FormParameters([("id_token_hint", idToken), ("post_logout_redirect_uri", "https://evil.example/")]).encoded)
            #expect(evil.status == .badRequest && evil.location == nil)
            let out = try await browser.get(
                "/oauth2/logout?"
                    + FormParameters([
                        ("id_token_hint", idToken), ("post_logout_redirect_uri", RelyingParty.afterLogout), ("state", "s9"),
                    ]).encoded)
            #expect(out.status == .seeOther && out.location == RelyingParty.afterLogout + "?state=s9")
            #expect(out.headers[.setCookie]?.contains("Max-Age=0") == true)
            #expect(try await fixture.server.sessions.session(cookie: cookie).session.userID == nil)
        }
    }
}
