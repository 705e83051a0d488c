import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// `response_mode` (OAuth 2.0 Multiple Response Type Encoding Practices, Form Post Response Mode):
/// where the answer goes, successes and errors alike (docs/threat-model.md FP1–FP3).
@Suite("Response modes and form_post")
struct FormPostTests {
    func authorize(_ fixture: Fixture, client: Client? = nil, _ extra: [(String, String)]) async throws -> AuthorizationStep {
        let client = client ?? fixture.native
        var parameters = [("client_id", client.id.rawValue), ("state", "s1")] + extra
        if client.type == .native {
            parameters += [
                ("redirect_uri", "http://127.0.0.1:5000/callback"), ("code_challenge", Fixture.verifier.s256Challenge),
                ("code_challenge_method", "S256"),
            ]
        }
        let session = try await fixture.signedInSession()
        var step = try await fixture.server.authorization.authorize(FormParameters(parameters), session: session)
        if case .consent(let prompt) = step {
            let form =
                [("csrf_token", session.csrfToken), ("request", prompt.pendingID), ("decision", "allow")]
                + prompt.scopes.map { ("scope", $0.name) }
            step = try await fixture.server.authorization.decide(FormParameters(form), session: session)
        }
        return step
    }

    @Test("A code with response_mode=form_post comes back as a form to the redirect URI, with state and iss; it redeems")
    func codeByFormPost() async throws {
        let fixture = try await Fixture.make()
        let step = try await authorize(
            fixture, [("response_type", "code"), ("scope", "profile"), ("response_mode", "form_post")])
        guard case .formPost(let response) = step else { Issue.record("not a form post: \(step)"); return }
        #expect(response.action == "http://127.0.0.1:5000/callback")
        #expect(response.value("state") == "s1" && response.value("iss") == Fixture.issuer)
        let code = try #require(response.value("code"))
        #expect(await fixture.exchange(code).value?.accessToken != nil)
        #expect(try await fixture.server.metadata().responseModesSupported == ["query", "fragment", "form_post"])
    }

    @Test("FP1 An error after the redirect URI is trusted goes back by form_post too; an unknown mode is invalid_request")
    func errorsByFormPost() async throws {
        let fixture = try await Fixture.make()
        let unknownScope = try await authorize(
            fixture, [("response_type", "code"), ("scope", "no-such-scope"), ("response_mode", "form_post")])
        guard case .formPost(let response) = unknownScope else { Issue.record("not a form post: \(unknownScope)"); return }
        #expect(response.value("error") == "invalid_scope" && response.value("code") == nil)
        let unknownMode = try await authorize(
            fixture, [("response_type", "code"), ("scope", "profile"), ("response_mode", "web_message")])
        guard case .redirect(let location) = unknownMode else { Issue.record("not a redirect: \(unknownMode)"); return }
        #expect(Fixture.parameter("error", in: location) == "invalid_request")
        // A redirect URI that is not registered is never answered by form: the error page.
        let foreign = try await fixture.server.authorization.authorize(
            FormParameters([
                ("client_id", fixture.native.id.rawValue), ("response_type", "code"), ("scope", "profile"),
                ("response_mode", "form_post"), ("redirect_uri", "https://attacker.example/cb"),
            ]), session: try await fixture.signedInSession())
        guard case .errorPage = foreign else { Issue.record("not an error page: \(foreign)"); return }
    }

    @Test("FP2 An implicit token never goes in the query; by form_post it leaves the URL entirely")
    func implicitModes() async throws {
        let fixture = try await Fixture.make()
        let query = try await authorize(
            fixture, client: fixture.spa,
            [
                ("response_type", "token"), ("scope", "profile"), ("redirect_uri", "https://spa.example/cb"),
                ("response_mode", "query"),
            ])
        guard case .redirect(let location) = query else { Issue.record("not a redirect: \(query)"); return }
        #expect(location.contains("#error=invalid_request") && !location.contains("access_token"))
        let posted = try await authorize(
            fixture, client: fixture.spa,
            [
                ("response_type", "token"), ("scope", "profile"), ("redirect_uri", "https://spa.example/cb"),
                ("response_mode", "form_post"),
            ])
        guard case .formPost(let response) = posted else { Issue.record("not a form post: \(posted)"); return }
        #expect(response.value("access_token") != nil && response.action == "https://spa.example/cb")
    }

    @Test("A code may come back in the fragment when asked")
    func codeInFragment() async throws {
        let fixture = try await Fixture.make()
        let step = try await authorize(fixture, [("response_type", "code"), ("scope", "profile"), ("response_mode", "fragment")])
        guard case .redirect(let location) = step else { Issue.record("not a redirect: \(step)"); return }
        #expect(location.hasPrefix("http://127.0.0.1:5000/callback#code="))
    }
}
