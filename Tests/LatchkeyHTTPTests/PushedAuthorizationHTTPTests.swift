import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// `POST /oauth2/par` (RFC 9126) over real HTTP on loopback.
@Suite("Pushed authorization requests over HTTP")
struct PushedAuthorizationHTTPTests {
    func request(_ fixture: Fixture) -> [(String, String)] {
        [
            ("response_type", "code"), ("client_id", fixture.native.id.rawValue),
            ("redirect_uri", "http://127.0.0.1:5000/callback"), ("scope", "profile"), ("state", "s1"),
            ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
        ]
    }

    @Test("201 with request_uri and expires_in, never cached; the browser's visit reaches sign-in")
    func created() async throws {
        try await withLiveServer { fixture, browser in
            let page = try await browser.post("/oauth2/par", form: request(fixture))
            #expect(page.status == .created)
            #expect(page.headers[.cacheControl] == "no-store")
            #expect(page.headers[.contentType]?.hasPrefix("application/json") == true)
            let requestURI = try #require(page.jsonObject["request_uri"] as? String)
            #expect(page.jsonObject["expires_in"] as? Int == 60)
            let visit = try await browser.get(
                "/oauth2/authorize?client_id=\(fixture.native.id)&request_uri=\(Browser.encode(requestURI))")
            #expect(visit.location?.hasPrefix("/login?request=") == true)
            // Used once: the same URL again is an error page.
            let again = try await browser.get(
                "/oauth2/authorize?client_id=\(fixture.native.id)&request_uri=\(Browser.encode(requestURI))")
            #expect(again.status == .badRequest)
            #expect(again.location == nil)
        }
    }

    @Test("Errors are the token endpoint's JSON; GET is 405; parameters in the URI are refused")
    func errors() async throws {
        try await withLiveServer { fixture, browser in
            let bad = try await browser.post(
                "/oauth2/par", form: request(fixture).filter { $0.0 != "code_challenge" && $0.0 != "code_challenge_method" })
            #expect(bad.status == .badRequest)
            #expect(bad.jsonObject["error"] as? String == "invalid_request")
            #expect(bad.headers[.cacheControl] == "no-store")
            let unknown = try await browser.post(
                "/oauth2/par", form: request(fixture).map { $0.0 == "client_id" ? ($0.0, "nobody") : $0 })
            #expect(unknown.status == .unauthorized)
            #expect(unknown.jsonObject["error"] as? String == "invalid_client")
            let get = try await browser.get("/oauth2/par")
            #expect(get.status == .methodNotAllowed)
            #expect(get.headers[.allow] == "POST")
            let query = try await browser.post("/oauth2/par?client_id=\(fixture.native.id)", form: request(fixture))
            #expect(query.status == .badRequest)
        }
    }

    @Test("The metadata names the endpoint")
    func metadata() async throws {
        try await withLiveServer { fixture, browser in
            let page = try await browser.get("/.well-known/oauth-authorization-server")
            #expect(page.jsonObject["pushed_authorization_request_endpoint"] as? String == Fixture.issuer + "/oauth2/par")
            #expect(page.jsonObject["require_pushed_authorization_requests"] as? Bool == false)
        }
    }
}
