import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The whole native-app flow over real HTTP on loopback, driven like a browser and an app would.
@Suite("End to end over loopback HTTP")
struct EndToEndTests {
    static let redirectURI = "http://127.0.0.1:43210/callback"

    /// Signs in and consents (granting `grant`) in `browser`; returns the redirect to the app.
    static func signInAndConsent(
        _ browser: Browser, fixture: Fixture, scope: String = "profile activity sleep", grant: [String]? = nil,
        state: String = "xyz"
    ) async throws -> String {
        let query = FormParameters([
            ("response_type", "code"), ("client_id", fixture.native.id.rawValue), ("redirect_uri", redirectURI), ("scope", scope),
            ("state", state), ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
        ]).encoded
        var page = try await browser.get("/oauth2/authorize?" + query)
        if page.status == .seeOther, let login = page.location, login.hasPrefix("/login") {
            let form = try await browser.get(login)
            #expect(form.status == .ok)
            page = try await browser.post(
                "/login",
                form: [
                    ("csrf_token", try #require(form.field("csrf_token"))), ("request", try #require(form.field("request"))),
                    ("username", "alice"), ("password", Fixture.password),
                ])
            #expect(page.status == .seeOther)
            page = try await browser.get(try #require(page.location))
        }
        if page.status == .ok {
            var decision = [
                ("csrf_token", try #require(page.field("csrf_token"))), ("request", try #require(page.field("request"))),
                ("decision", "allow"),
            ]
            decision += (grant ?? scope.split(separator: " ").map(String.init)).map { ("scope", $0) }
            page = try await browser.post("/oauth2/authorize", form: decision)
        }
        #expect(page.status == .seeOther)
        return try #require(page.location)
    }

    static func exchange(_ app: Browser, fixture: Fixture, code: String) async throws -> Browser.Page {
        try await app.post(
            "/oauth2/token",
            form: [
                ("grant_type", "authorization_code"), ("code", code), ("client_id", fixture.native.id.rawValue),
                ("redirect_uri", redirectURI), ("code_verifier", Fixture.verifier.value),
            ])
    }

    static func userInfo(_ app: Browser, _ accessToken: String) async throws -> Browser.Page {
        try await app.get("/userinfo", headers: [.authorization: "Bearer \(accessToken)"])
    }

    @Test("Sign in, consent partially, exchange, call /userinfo, refresh, and the old refresh token is dead")
    func nativeFlow() async throws {
        let fixture = try await Fixture.make()
        let live = try await LiveServer.start(fixture.server)
        let browser = Browser(port: live.port)
        let app = Browser(port: live.port)

        let callback = try await Self.signInAndConsent(browser, fixture: fixture, grant: ["profile", "sleep"])
        #expect(callback.hasPrefix(Self.redirectURI + "?"))
        #expect(Fixture.parameter("state", in: callback) == "xyz")
        #expect(Fixture.parameter("iss", in: callback) == Fixture.issuer)
        let code = try #require(Fixture.parameter("code", in: callback))

        let tokenPage = try await Self.exchange(app, fixture: fixture, code: code)
        #expect(tokenPage.status == .ok)
        #expect(tokenPage.headers[.cacheControl] == "no-store")
        #expect(tokenPage.headers[.contentType] == "application/json;charset=UTF-8")
        let tokens = try tokenPage.json(TokenResponse.self)
        #expect(tokens.scope == "profile sleep")
        #expect(tokens.userID == fixture.alice.id.rawValue)
        #expect(tokens.expiresIn == 28_800)

        let info = try await Self.userInfo(app, tokens.accessToken)
        #expect(info.status == .ok)
        #expect(info.jsonObject["username"] as? String == "alice")
        #expect(info.jsonObject["user_id"] as? String == fixture.alice.id.rawValue)

        let refreshed = try await app.post(
            "/oauth2/token",
            form: [
                ("grant_type", "refresh_token"), ("refresh_token", tokens.refreshToken!),
                ("client_id", fixture.native.id.rawValue),
            ])
        #expect(refreshed.status == .ok)
        let second = try refreshed.json(TokenResponse.self)
        #expect(second.refreshToken != tokens.refreshToken)
        #expect(second.scope == "profile sleep")
        // The app uses its new refresh token; from then on the old one is dead, and presenting it
        // revokes the grant (reuse detection).
        let third = try await app.post(
            "/oauth2/token",
            form: [
                ("grant_type", "refresh_token"), ("refresh_token", second.refreshToken!),
                ("client_id", fixture.native.id.rawValue),
            ])
        #expect(third.status == .ok)
        let reuse = try await app.post(
            "/oauth2/token",
            form: [
                ("grant_type", "refresh_token"), ("refresh_token", tokens.refreshToken!),
                ("client_id", fixture.native.id.rawValue),
            ])
        #expect(reuse.status == .badRequest)
        #expect(reuse.jsonObject["error"] as? String == "invalid_grant")
        let afterReuse = try await Self.userInfo(app, try third.json(TokenResponse.self).accessToken)
        #expect(afterReuse.status == .unauthorized)
        #expect(afterReuse.headers[.wwwAuthenticate]?.contains("invalid_token") == true)

        try await browser.close()
        try await app.close()
        try await live.stop()
    }

    @Test("A replayed code over HTTP is invalid_grant and kills the first exchange's token")
    func codeReplay() async throws {
        let fixture = try await Fixture.make()
        let live = try await LiveServer.start(fixture.server)
        let browser = Browser(port: live.port)
        let callback = try await Self.signInAndConsent(browser, fixture: fixture)
        let code = try #require(Fixture.parameter("code", in: callback))
        let first = try await Self.exchange(browser, fixture: fixture, code: code)
        let second = try await Self.exchange(browser, fixture: fixture, code: code)
        #expect(second.status == .badRequest)
        #expect(second.jsonObject["error"] as? String == "invalid_grant")
        #expect(second.headers[.cacheControl] == "no-store")
        #expect(try await Self.userInfo(browser, try first.json(TokenResponse.self).accessToken).status == .unauthorized)
        try await browser.close()
        try await live.stop()
    }

    @Test("Deny sends access_denied with state and iss to the app")
    func deny() async throws {
        let fixture = try await Fixture.make()
        let live = try await LiveServer.start(fixture.server)
        let browser = Browser(port: live.port)
        let query = FormParameters([
            ("response_type", "code"), ("client_id", fixture.native.id.rawValue), ("redirect_uri", Self.redirectURI),
            ("scope", "profile"),
            ("state", "st"), ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
        ]).encoded
        let login = try await browser.get(try #require(try await browser.get("/oauth2/authorize?" + query).location))
        let consent = try await browser.get(
            try #require(
                try await browser.post(
                    "/login",
                    form: [
                        ("csrf_token", login.field("csrf_token")!), ("request", login.field("request")!), ("username", "alice"),
                        ("password", Fixture.password),
                    ]
                ).location))
        let denied = try await browser.post(
            "/oauth2/authorize",
            form: [("csrf_token", consent.field("csrf_token")!), ("request", consent.field("request")!), ("decision", "deny")])
        #expect(denied.status == .seeOther)
        // T59: the redirect back to the app leaks no referrer.
        #expect(denied.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
        let location = try #require(denied.location)
        #expect(Fixture.parameter("error", in: location) == "access_denied")
        #expect(Fixture.parameter("state", in: location) == "st")
        #expect(Fixture.parameter("iss", in: location) == Fixture.issuer)
        try await browser.close()
        try await live.stop()
    }

    @Test("Restarting on the same data dir keeps users, clients, sessions, consent, grants and tokens")
    func restart() async throws {
        let fixture = try await Fixture.make()
        var live = try await LiveServer.start(fixture.server)
        var browser = Browser(port: live.port)
        let callback = try await Self.signInAndConsent(browser, fixture: fixture, scope: "profile activity")
        let tokens = try await Self.exchange(browser, fixture: fixture, code: Fixture.parameter("code", in: callback)!)
            .json(TokenResponse.self)
        let cookies = await browser.cookies
        try await browser.close()
        try await live.stop()

        // A new process-equivalent: a new store and server over the same folder.
        let reopened = try fixture.reopened()
        live = try await LiveServer.start(reopened.server)
        browser = Browser(port: live.port)
        #expect(try await Self.userInfo(browser, tokens.accessToken).status == .ok)
        let refreshed = try await browser.post(
            "/oauth2/token",
            form: [
                ("grant_type", "refresh_token"), ("refresh_token", tokens.refreshToken!),
                ("client_id", fixture.native.id.rawValue),
            ])
        #expect(refreshed.status == .ok)
        // The signed-in session and the remembered consent survive: the code comes back at once.
        let query = FormParameters([
            ("response_type", "code"), ("client_id", fixture.native.id.rawValue), ("redirect_uri", Self.redirectURI),
            ("scope", "profile"), ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
        ]).encoded
        let cookie = cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        let again = try await browser.get("/oauth2/authorize?" + query, headers: [.cookie: cookie])
        #expect(again.status == .seeOther)
        #expect(again.location.flatMap { Fixture.parameter("code", in: $0) } != nil)
        try await browser.close()
        try await live.stop()
    }
}
