import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Issue 4's flows end to end over loopback HTTP.
@Suite("Every flow over HTTP: client credentials, implicit, revocation, introspection, account page")
struct GrantLifecycleHTTPTests {
    @Test("A service gets a token by client credentials, introspects it, revokes it, and it is dead")
    func serviceLifecycle() async throws {
        try await withLiveServer { fixture, http in
            let basic: HTTPFields = [.authorization: fixture.serviceBasic]
            let issued = try await http.post(
                "/oauth2/token", form: [("grant_type", "client_credentials"), ("scope", "sleep")], headers: basic)
            #expect(issued.status == .ok)
            #expect(issued.headers[.cacheControl] == "no-store")
            let token = try #require(issued.jsonObject["access_token"] as? String)
            #expect(issued.jsonObject["refresh_token"] == nil && issued.jsonObject["user_id"] == nil)

            let active = try await http.post("/oauth2/introspect", form: [("token", token)], headers: basic)
            #expect(active.status == .ok && active.headers[.cacheControl] == "no-store")
            #expect(active.jsonObject["active"] as? Bool == true)
            #expect(active.jsonObject["client_id"] as? String == fixture.service.id.rawValue)
            #expect(active.jsonObject["scope"] as? String == "sleep")
            #expect(active.jsonObject["sub"] == nil)

            let revoked = try await http.post(
                "/oauth2/revoke", form: [("token", token), ("token_type_hint", "access_token")], headers: basic)
            #expect(revoked.status == .ok && revoked.body.isEmpty && revoked.headers[.cacheControl] == "no-store")
            let inactive = try await http.post("/oauth2/introspect", form: [("token", token)], headers: basic)
            #expect(inactive.body == #"{"active":false}"#)
        }
    }

    @Test("T67 T33 Introspection and revocation refuse the unauthenticated, public callers and credentials in the URI")
    func refusals() async throws {
        try await withLiveServer { fixture, http in
            let anonymous = try await http.post("/oauth2/introspect", form: [("token", "x")])
            #expect(anonymous.status == .unauthorized && anonymous.jsonObject["error"] as? String == "invalid_client")
            let publicClient = try await http.post(
                "/oauth2/introspect", form: [("token", "x"), ("client_id", fixture.native.id.rawValue)])
            #expect(publicClient.status == .unauthorized)
            let inURI = try await http.post("/oauth2/revoke?token=x", form: [("client_id", fixture.native.id.rawValue)])
            #expect(inURI.status == .badRequest)
            let repeated = try await http.post(
                "/oauth2/revoke", form: [("token", "a"), ("token", "b"), ("client_id", fixture.native.id.rawValue)])
            #expect(repeated.jsonObject["error"] as? String == "invalid_request")
        }
    }

    @Test("The implicit grant in a browser: the lifetime is chosen on the consent page, the token is in the fragment")
    func implicitInBrowser() async throws {
        try await withLiveServer { fixture, browser in
            let query = FormParameters([
                ("response_type", "token"), ("client_id", fixture.spa.id.rawValue), ("redirect_uri", "https://spa.example/cb"),
                ("scope", "profile activity"), ("state", "st"),
            ]).encoded
            let login = try await browser.get(try #require(try await browser.get("/oauth2/authorize?" + query).location))
            let next = try await browser.post(
                "/login",
                form: [
                    ("csrf_token", login.field("csrf_token")!), ("request", login.field("request")!),
                    ("username", "alice"), ("password", Fixture.password),
                ])
            let consent = try await browser.get(try #require(next.location))
            #expect(consent.body.contains("<select id=\"lifetime\" name=\"lifetime\">"))
            #expect(consent.body.contains("<option value=\"31536000\">1 year</option>"))
            let done = try await browser.post(
                "/oauth2/authorize",
                form: [
                    ("csrf_token", consent.field("csrf_token")!), ("request", consent.field("request")!), ("decision", "allow"),
                    ("scope", "profile"), ("lifetime", "2592000"),
                ])
            let location = try #require(done.location)
            #expect(location.hasPrefix("https://spa.example/cb#access_token="))
            let fragment = try FormParameters(decoding: String(location.split(separator: "#")[1]))
            #expect(fragment["expires_in"] == "2592000" && fragment["scope"] == "profile" && fragment["refresh_token"] == nil)
            let info = try await browser.get("/userinfo", headers: [.authorization: "Bearer \(fragment["access_token"]!)"])
            #expect(info.status == .ok)
        }
    }

    @Test("The account page lists connected apps and disconnects one (CSRF-protected)")
    func accountPage() async throws {
        try await withLiveServer { fixture, browser in
            let callback = try await EndToEndTests.signInAndConsent(browser, fixture: fixture, scope: "profile activity")
            let tokens = try await EndToEndTests.exchange(
                browser, fixture: fixture, code: Fixture.parameter("code", in: callback)!
            )
            .json(TokenResponse.self)
            let page = try await browser.get("/account")
            #expect(page.status == .ok)
            #expect(page.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
            #expect(page.body.contains(">Notes</h3>"))
            #expect(page.body.contains("(profile)") && page.body.contains("(activity)"))
            #expect(page.body.contains("<img src=\"https://notes.example/logo.png\""))
            let forged = try await browser.post(
                "/account/revoke", form: [("csrf_token", "x"), ("client_id", fixture.native.id.rawValue)])
            #expect(forged.status == .forbidden)
            #expect(try await EndToEndTests.userInfo(browser, tokens.accessToken).status == .ok)
            let done = try await browser.post(
                "/account/revoke", form: [("csrf_token", page.field("csrf_token")!), ("client_id", fixture.native.id.rawValue)])
            #expect(done.status == .seeOther && done.location == "/account")
            #expect(try await EndToEndTests.userInfo(browser, tokens.accessToken).status == .unauthorized)
            #expect(try await browser.get("/account").body.contains("No app is connected"))
            // The consent was forgotten: the next sign-in asks again.
            let query = FormParameters([
                ("response_type", "code"), ("client_id", fixture.native.id.rawValue), ("redirect_uri", EndToEndTests.redirectURI),
                ("scope", "profile"), ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
            ]).encoded
            #expect(try await browser.get("/oauth2/authorize?" + query).status == .ok)
        }
    }

    @Test("Signed out, /account sends the browser to sign in, and back to /account after")
    func accountNeedsSignIn() async throws {
        try await withLiveServer { fixture, browser in
            let page = try await browser.get("/account")
            #expect(page.status == .seeOther && page.location == "/login")
            let login = try await browser.get("/login")
            let next = try await browser.post(
                "/login",
                form: [("csrf_token", login.field("csrf_token")!), ("username", "alice"), ("password", Fixture.password)])
            #expect(next.location == "/account")
        }
    }
}
