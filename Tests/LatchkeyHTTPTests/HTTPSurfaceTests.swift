import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// What the HTTP layer adds: headers, content types, limits, pages, metadata.
@Suite("HTTP surface")
struct HTTPSurfaceTests {
    func expectTokenError(
        _ page: Browser.Page, status: HTTPResponse.Status, error: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(page.status == status, sourceLocation: sourceLocation)
        #expect(page.jsonObject["error"] as? String == error, "\(page.body)", sourceLocation: sourceLocation)
        #expect(page.headers[.cacheControl] == "no-store", sourceLocation: sourceLocation)
        #expect(page.jsonObject["access_token"] == nil, sourceLocation: sourceLocation)
    }

    @Test("T68 Metadata: issuer, S256 only, iss parameter, endpoints")
    func metadata() async throws {
        try await withLiveServer { fixture, browser in
            let page = try await browser.get("/.well-known/oauth-authorization-server")
            #expect(page.status == .ok)
            let metadata = try page.json(AuthorizationServerMetadata.self)
            #expect(metadata.issuer == Fixture.issuer)
            #expect(metadata.codeChallengeMethodsSupported == ["S256"])
            #expect(metadata.authorizationResponseIssParameterSupported)
            #expect(metadata.responseTypesSupported == ["code", "token"])
            #expect(metadata.revocationEndpoint == Fixture.issuer + "/oauth2/revoke")
            #expect(metadata.introspectionEndpoint == Fixture.issuer + "/oauth2/introspect")
            #expect(!metadata.grantTypesSupported.contains("password"))
            #expect(metadata.tokenEndpoint == Fixture.issuer + "/oauth2/token")
            #expect(metadata.scopesSupported.contains("profile"))
            #expect(try await browser.get("/healthz").status == .ok)
            let ready = try await browser.get("/readyz")
            #expect(ready.status == .ok && ready.jsonObject["status"] as? String == "ready")
        }
    }

    @Test("T16 T25 T58 An unknown client or unregistered redirect URI gets a framed-proof error page, no Location")
    func errorPage() async throws {
        try await withLiveServer { fixture, browser in
            for query in [
                "client_id=nope&response_type=code&redirect_uri=https%3A%2F%2Fattacker.example%2Fcb",
                "client_id=\(fixture.native.id)&response_type=code&redirect_uri=https%3A%2F%2Fattacker.example%2Fcb",
                "client_id=\(fixture.native.id)&client_id=\(fixture.native.id)&response_type=code",
                "client_id=%ZZ",
            ] {
                let page = try await browser.get("/oauth2/authorize?" + query)
                #expect(page.status == .badRequest)
                #expect(page.location == nil)
                #expect(!page.body.contains("attacker.example"))
                #expect(page.headers[.contentType] == "text/html; charset=utf-8")
                #expect(page.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
                #expect(page.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            }
        }
    }

    @Test("T58 T59 T63 Pages: no framing, no referrer, no caching; cookie HttpOnly and SameSite=Lax")
    func pageHeaders() async throws {
        try await withLiveServer { fixture, browser in
            let page = try await browser.get("/login")
            #expect(page.status == .ok)
            #expect(page.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
            #expect(page.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            #expect(page.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
            #expect(page.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            #expect(page.headers[.cacheControl] == "no-store")
            let cookie = try #require(page.headers[.setCookie])
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && !cookie.contains("Domain"))
            #expect(page.body.contains("name=\"username\"") && page.body.contains("name=\"password\""))
            #expect(page.body.contains("<label class=\"field\" for=\"username\">"))
        }
    }

    @Test("T60 Login without the session's CSRF token is 403; a wrong password is 401 with the form again")
    func loginForm() async throws {
        try await withLiveServer { fixture, browser in
            let form = try await browser.get("/login")
            let forged = try await browser.post(
                "/login", form: [("csrf_token", "x"), ("username", "alice"), ("password", Fixture.password)])
            #expect(forged.status == .forbidden)
            #expect(forged.headers[.setCookie] == nil)
            let wrong = try await browser.post(
                "/login", form: [("csrf_token", form.field("csrf_token")!), ("username", "alice"), ("password", "nope-nope")])
            #expect(wrong.status == .unauthorized)
            #expect(wrong.body.contains("username or password is not right"))
            let right = try await browser.post(
                "/login",
                form: [("csrf_token", form.field("csrf_token")!), ("username", "alice"), ("password", Fixture.password)])
            #expect(right.status == .seeOther)
            #expect(right.headers[.setCookie]?.hasPrefix("lk_session=") == true)
        }
    }

    @Test("T62 Over the account's limit, sign-in is 429 with Retry-After and the right password is not checked")
    func loginThrottled() async throws {
        try await withLiveServer(configure: { $0.signInAttemptsPerAccount = 2 }) { fixture, browser in
            let csrf = try await browser.get("/login").field("csrf_token")!
            for _ in 0..<2 {
                let wrong = try await browser.post(
                    "/login", form: [("csrf_token", csrf), ("username", "alice"), ("password", "nope-nope")])
                #expect(wrong.status == .unauthorized)
            }
            let refused = try await browser.post(
                "/login", form: [("csrf_token", csrf), ("username", "alice"), ("password", Fixture.password)])
            #expect(refused.status == .tooManyRequests)
            #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 > 0)
            #expect(refused.body.contains("Too many failed sign-ins"))
            #expect(refused.headers[.setCookie] == nil, "no session was created")
            let bob = try await browser.post(
                "/login", form: [("csrf_token", csrf), ("username", "bob"), ("password", "battery-staple")])
            #expect(bob.status == .seeOther)
        }
    }

    @Test("T63 Sign-out is CSRF-checked, clears the cookie, and the old cookie no longer signs anyone in")
    func signOut() async throws {
        try await withLiveServer { fixture, browser in
            let csrf = try await browser.get("/login").field("csrf_token")!
            let signedIn = try await browser.post(
                "/login", form: [("csrf_token", csrf), ("username", "alice"), ("password", Fixture.password)])
            #expect(signedIn.status == .seeOther)
            let oldCookie = await browser.cookies["lk_session"]!
            let account = try await browser.get("/account")
            #expect(account.status == .ok && account.body.contains("action=\"/logout\""))
            let forged = try await browser.post("/logout", form: [("csrf_token", "x")])
            #expect(forged.status == .forbidden)
            #expect(try await browser.get("/account").status == .ok, "still signed in")
            let out = try await browser.post("/logout", form: [("csrf_token", account.field("csrf_token")!)])
            #expect(out.status == .seeOther && out.location == "/login")
            #expect(out.headers[.setCookie]?.contains("Max-Age=0") == true)
            let replay = try await browser.get("/account", headers: [.cookie: "lk_session=\(oldCookie)"])
            #expect(replay.status == .seeOther && replay.location == "/login")
        }
    }

    @Test("The consent page shows name, logo, escaped Markdown, privacy link and one checkbox per scope")
    func consentPage() async throws {
        try await withLiveServer { fixture, browser in
            let query = FormParameters([
                ("response_type", "code"), ("client_id", fixture.native.id.rawValue),
                ("redirect_uri", "com.example.notes:/oauth2redirect"),
                ("scope", "profile activity"), ("code_challenge", Fixture.verifier.s256Challenge),
                ("code_challenge_method", "S256"),
            ]).encoded
            let login = try await browser.get(try #require(try await browser.get("/oauth2/authorize?" + query).location))
            let next = try await browser.post(
                "/login",
                form: [
                    ("csrf_token", login.field("csrf_token")!), ("request", login.field("request")!), ("username", "alice"),
                    ("password", Fixture.password),
                ])
            let page = try await browser.get(try #require(next.location))
            #expect(page.status == .ok)
            // T58: the consent page cannot be framed.
            #expect(page.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
            #expect(page.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            #expect(page.body.contains("<strong>Notes</strong> wants to access your account"))
            #expect(page.body.contains("<img src=\"https://notes.example/logo.png\""))
            #expect(page.body.contains("<strong>your</strong>"), "Markdown is rendered")
            #expect(!page.body.contains("<script>"), "HTML in the consent text is escaped")
            #expect(page.body.contains("&lt;script&gt;"))
            #expect(!page.body.contains("javascript:"), "unsafe links are dropped")
            #expect(page.body.contains("href=\"https://notes.example/privacy\""))
            #expect(page.body.contains("name=\"scope\" value=\"profile\" checked"))
            #expect(page.body.contains("name=\"scope\" value=\"activity\" checked"))
            #expect(
                page.body.contains("name=\"decision\" value=\"allow\"") && page.body.contains("name=\"decision\" value=\"deny\""))
            #expect(page.body.contains("See your activity and exercise"))
            #expect(page.body.contains("width=device-width"))
        }
    }

    @Test("T33 The token endpoint wants POST, a form body and no credentials in the URI")
    func tokenInput() async throws {
        try await withLiveServer { fixture, browser in
            let get = try await browser.get("/oauth2/token?grant_type=authorization_code")
            #expect(get.status == .methodNotAllowed)
            #expect(get.headers[.cacheControl] == "no-store")
            for contentType in [
                "application/json", "text/plain", "multipart/form-data", "</><script>",
                "application/x-www-form-urlencoded; charset=iso-8859-1",
            ] {
                let page = try await browser.post(
                    "/oauth2/token", body: "grant_type=refresh_token&refresh_token=x&client_id=\(fixture.native.id)",
                    contentType: contentType)
                expectTokenError(page, status: .badRequest, error: "invalid_request")
            }
            let inURI = try await browser.post(
                "/oauth2/token?client_secret=\(fixture.webSecret)",
                form: [("grant_type", "refresh_token"), ("refresh_token", "x")])
            expectTokenError(inURI, status: .badRequest, error: "invalid_request")
        }
    }

    @Test("T34 T35 T36 Malformed, non-UTF-8, repeated and oversized bodies are invalid_request, never 5xx")
    func malformedBodies() async throws {
        try await withLiveServer { fixture, browser in
            for body in ["code=%ZZ", "code=%", "grant_type=authorization_code&code=a&code=b&client_id=\(fixture.native.id)"] {
                expectTokenError(
                    try await browser.post("/oauth2/token", body: body), status: .badRequest, error: "invalid_request")
            }
            expectTokenError(
                try await browser.postRaw("/oauth2/token", bytes: Array("grant_type=".utf8) + [0xFF, 0xFE]), status: .badRequest,
                error: "invalid_request")
            let huge = "grant_type=refresh_token&refresh_token=" + String(repeating: "a", count: 70_000)
            expectTokenError(
                try await browser.post("/oauth2/token", body: huge), status: .contentTooLarge, error: "invalid_request")
            // One parameter over 8 KiB, and more than 256 parameters, inside the body limit.
            let long = "grant_type=refresh_token&refresh_token=" + String(repeating: "a", count: 9_000)
            expectTokenError(try await browser.post("/oauth2/token", body: long), status: .badRequest, error: "invalid_request")
            let many = (0..<300).map { "p\($0)=x" }.joined(separator: "&")
            expectTokenError(try await browser.post("/oauth2/token", body: many), status: .badRequest, error: "invalid_request")
            for path in ["/oauth2/revoke", "/oauth2/introspect"] {
                expectTokenError(try await browser.post(path, body: huge), status: .contentTooLarge, error: "invalid_request")
                expectTokenError(try await browser.post(path, body: long), status: .badRequest, error: "invalid_request")
            }
            // At the authorization endpoint an over-long state is an error page, never a truncated redirect.
            let query = "response_type=code&client_id=\(fixture.native.id)&state=" + String(repeating: "s", count: 9_000)
            let page = try await browser.get("/oauth2/authorize?" + query)
            #expect(page.status == .badRequest)
            #expect(page.headers[.location] == nil)
        }
    }

    @Test("T37 A failed Basic authentication is 401 invalid_client with WWW-Authenticate: Basic")
    func basicChallenge() async throws {
        try await withLiveServer { fixture, browser in
            let header = "Basic " + Data("\(fixture.web.id):wrong".utf8).base64EncodedString()
            let page = try await browser.post(
                "/oauth2/token", form: [("grant_type", "authorization_code"), ("code", "x")], headers: [.authorization: header])
            expectTokenError(page, status: .unauthorized, error: "invalid_client")
            #expect(page.headers[.wwwAuthenticate]?.hasPrefix("Basic") == true)
            let noHeader = try await browser.post(
                "/oauth2/token", form: [("grant_type", "authorization_code"), ("code", "x"), ("client_id", "nope")])
            expectTokenError(noHeader, status: .unauthorized, error: "invalid_client")
        }
    }

    @Test("T52 /userinfo: no token is a bare 401 challenge; a token in the query is ignored")
    func bearerChallenge() async throws {
        try await withLiveServer { fixture, browser in
            let tokens = try await fixture.exchange(try await fixture.code()).get()
            let none = try await browser.get("/userinfo")
            #expect(none.status == .unauthorized)
            // Both schemes are offered (RFC 9449 §7.1): the bearer one and DPoP with its algorithms.
            #expect(none.headers[values: .wwwAuthenticate] == ["Bearer realm=\"latchkey\"", "DPoP algs=\"ES256 RS256 EdDSA\""])
            let inQuery = try await browser.get("/userinfo?access_token=\(tokens.accessToken)")
            #expect(inQuery.status == .unauthorized)
            let scoped = try await fixture.exchange(try await fixture.code(scope: "activity")).get()
            let forbidden = try await browser.get("/userinfo", headers: [.authorization: "Bearer \(scoped.accessToken)"])
            #expect(forbidden.status == .forbidden)
            #expect(forbidden.headers[.wwwAuthenticate]?.contains("insufficient_scope") == true)
        }
    }
}
