import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("Dynamic registration and resources over HTTP")
struct RegistrationHTTPTests {
    @Test("POST /oauth2/register answers 201 JSON; the management URI needs its token; the consent page marks the app")
    func registerAndConsent() async throws {
        try await withLiveServer(configure: { $0.dynamicRegistration.mode = .open }) { fixture, browser in
            _ = try await fixture.admin.addResource(
                ResourceRegistration(uri: "https://mcp.example/mcp", name: "Sleep tools", scopes: ["sleep"]))
            let body = #"{"client_name":"Agent","redirect_uris":["http://127.0.0.1/callback"],"scope":"sleep"}"#
            let created = try await browser.send(.post, "/oauth2/register", json: body)
            #expect(created.status == .created && created.headers[.cacheControl] == "no-store")
            let object = created.jsonObject
            let id = try #require(object["client_id"] as? String)
            let token = try #require(object["registration_access_token"] as? String)
            #expect(try await browser.get("/oauth2/register").status == .methodNotAllowed)
            #expect(
                try await browser.post("/oauth2/register", body: body, contentType: "text/plain").status == .unsupportedMediaType)
            let unauthenticated = try await browser.get("/oauth2/register/" + id)
            #expect(unauthenticated.status == .unauthorized)
            #expect(unauthenticated.headers[.wwwAuthenticate] == #"Bearer error="invalid_token""#)
            let read = try await browser.get("/oauth2/register/" + id, headers: [.authorization: "Bearer " + token])
            #expect(read.status == .ok && read.jsonObject["client_name"] as? String == "Agent")

            // Its consent page says it registered itself, where the answer goes, and the resource.
            _ = try await browser.post(
                "/login",
                form: [
                    ("csrf_token", try await browser.get("/login").field("csrf_token")!), ("username", "alice"),
                    ("password", Fixture.password),
                ])
            let query = FormParameters([
                ("response_type", "code"), ("client_id", id), ("scope", "sleep"), ("state", "s"),
                ("redirect_uri", "http://127.0.0.1:7777/callback"), ("code_challenge", Fixture.verifier.s256Challenge),
                ("code_challenge_method", "S256"), ("resource", "https://mcp.example/mcp"),
            ]).encoded
            var page = try await browser.get("/oauth2/authorize?" + query)
            if let next = page.location { page = try await browser.get(next) }
            #expect(page.status == .ok)
            #expect(page.body.contains("Not verified by this server.") && page.body.contains("It registered itself"))
            #expect(page.body.contains("Your answer goes to <strong>127.0.0.1</strong> (an app on this device)."))
            #expect(page.body.contains("<strong>Sleep tools</strong> <small>https://mcp.example/mcp</small>"))
            let deleted = try await browser.send(.delete, "/oauth2/register/" + id, headers: [.authorization: "Bearer " + token])
            #expect(deleted.status == .noContent)
        }
    }

    @Test("Off, the endpoint answers 403 and the metadata has no registration_endpoint")
    func off() async throws {
        try await withLiveServer { _, browser in
            let answer = try await browser.send(.post, "/oauth2/register", json: #"{"redirect_uris":["http://127.0.0.1/cb"]}"#)
            #expect(answer.status == .forbidden && answer.jsonObject["error"] as? String == "access_denied")
            #expect(try await browser.get("/.well-known/oauth-authorization-server").jsonObject["registration_endpoint"] == nil)
        }
    }
}
