import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Authorization request rules of docs/design.md §2, checked on the endpoint logic without a socket.
@Suite("Authorization request")
struct AuthorizationRequestTests {
    let challenge = Fixture.verifier.s256Challenge

    func request(_ fixture: Fixture, _ overrides: [String: String?] = [:], extra: [(String, String)] = []) async throws
        -> AuthorizationStep
    {
        var parameters: [String: String?] = [
            "response_type": "code", "client_id": fixture.native.id.rawValue, "redirect_uri": "http://127.0.0.1:5000/callback",
            "scope": "profile", "state": "s1", "code_challenge": challenge, "code_challenge_method": "S256",
        ]
        parameters.merge(overrides) { _, new in new }
        let pairs = parameters.compactMap { name, value in value.map { (name, $0) } }.sorted { $0.0 < $1.0 }
        return try await fixture.server.authorization.authorize(FormParameters(pairs + extra), session: fixture.signedInSession())
    }

    /// The error of a redirect, checking it goes to `redirectURI` with `iss` and no code.
    func redirectError(_ step: AuthorizationStep, to redirectURI: String = "http://127.0.0.1:5000/callback") -> String? {
        guard case .redirect(let location) = step, location.hasPrefix(redirectURI + "?") else { return nil }
        #expect(Fixture.parameter("iss", in: location) == Fixture.issuer)
        #expect(Fixture.parameter("code", in: location) == nil)
        return Fixture.parameter("error", in: location)
    }

    func isErrorPage(_ step: AuthorizationStep) -> Bool {
        if case .errorPage = step { return true }
        return false
    }

    @Test("A valid request from a signed-in user shows the consent page with the requested scopes")
    func valid() async throws {
        let fixture = try await Fixture.make()
        let step = try await request(fixture, ["scope": "profile activity"])
        guard case .consent(let prompt) = step else { Issue.record("expected consent, got \(step)"); return }
        #expect(prompt.client.name == "Notes")
        #expect(prompt.scopes.map(\.name) == ["profile", "activity"])
        #expect(prompt.scopes[0].description == "See your name and username")
    }

    @Test("A browser that is not signed in is sent to the login form")
    func needsSignIn() async throws {
        let fixture = try await Fixture.make()
        let anonymous = try await fixture.server.sessions.session(cookie: nil).session
        let step = try await fixture.server.authorization.authorize(
            FormParameters([
                ("response_type", "code"), ("client_id", fixture.native.id.rawValue), ("scope", "profile"),
                ("code_challenge", challenge), ("code_challenge_method", "S256"),
                ("redirect_uri", "com.example.notes:/oauth2redirect"),
            ]), session: anonymous)
        guard case .signIn = step else { Issue.record("expected sign-in, got \(step)"); return }
    }

    @Test("T25 An unknown, missing or repeated client_id gets an error page, never a redirect")
    func unknownClient() async throws {
        let fixture = try await Fixture.make()
        #expect(isErrorPage(try await request(fixture, ["client_id": "nope"])))
        #expect(isErrorPage(try await request(fixture, ["client_id": nil])))
        #expect(isErrorPage(try await request(fixture, extra: [("client_id", fixture.native2.id.rawValue)])))
    }

    @Test("T16 T25 An unregistered redirect URI gets an error page, even combined with other errors")
    func unregisteredRedirect() async throws {
        let fixture = try await Fixture.make()
        for overrides: [String: String?] in [
            ["redirect_uri": "https://attacker.example/cb"],
            ["redirect_uri": "https://attacker.example/cb", "response_type": "bogus"],
            ["redirect_uri": "https://attacker.example/cb", "scope": "admin"],
            ["redirect_uri": "https://attacker.example/cb", "code_challenge_method": "plain"],
            ["redirect_uri": "http://127.0.0.1:5000/callback/x"],
            ["redirect_uri": "http://localhost:5000/callback"],
        ] {
            #expect(isErrorPage(try await request(fixture, overrides)), "\(overrides)")
        }
        #expect(isErrorPage(try await request(fixture, extra: [("redirect_uri", "http://127.0.0.1:5000/callback")])))
    }

    @Test("T24 redirect_uri may be omitted only when exactly one is registered")
    func omittedRedirect() async throws {
        let fixture = try await Fixture.make()
        #expect(isErrorPage(try await request(fixture, ["redirect_uri": nil])))
        let step = try await fixture.server.authorization.authorize(
            FormParameters([
                ("response_type", "code"), ("client_id", fixture.native2.id.rawValue), ("scope", "profile"),
                ("code_challenge", challenge), ("code_challenge_method", "S256"),
            ]), session: fixture.signedInSession())
        guard case .consent = step else { Issue.record("expected consent, got \(step)"); return }
    }

    @Test("T26 response_type missing or unsupported goes back to the client as an error")
    func responseType() async throws {
        let fixture = try await Fixture.make()
        #expect(redirectError(try await request(fixture, ["response_type": nil])) == "invalid_request")
        #expect(redirectError(try await request(fixture, ["response_type": "bogus"])) == "unsupported_response_type")
        // T53: the implicit grant for a client not registered for it: unauthorized_client, in the fragment.
        let implicit = try await request(fixture, ["response_type": "token"])
        guard case .redirect(let location) = implicit else { Issue.record("no redirect"); return }
        #expect(location.hasPrefix("http://127.0.0.1:5000/callback#"))
        let fragment = try FormParameters(decoding: String(location.split(separator: "#")[1]))
        #expect(fragment["error"] == "unauthorized_client")
        #expect(fragment["iss"] == Fixture.issuer)
        #expect(fragment["access_token"] == nil)
        #expect(redirectError(try await request(fixture, ["response_type": "bogus"])) == "unsupported_response_type")
    }

    @Test("T01 A native client without PKCE is refused")
    func pkceRequired() async throws {
        let fixture = try await Fixture.make()
        #expect(
            redirectError(try await request(fixture, ["code_challenge": nil, "code_challenge_method": nil])) == "invalid_request")
        #expect(
            redirectError(try await request(fixture, ["code_challenge": "", "code_challenge_method": nil])) == "invalid_request")
    }

    @Test("T02 T03 plain, a missing method, a method alone and malformed challenges are refused")
    func pkceMethod() async throws {
        let fixture = try await Fixture.make()
        for overrides: [String: String?] in [
            ["code_challenge_method": "plain"], ["code_challenge_method": nil], ["code_challenge": nil],
            ["code_challenge": String(challenge.dropLast())], ["code_challenge": challenge + "A"],
            ["code_challenge": String(challenge.dropLast()) + "="], ["code_challenge": String(repeating: "a", count: 129)],
        ] {
            #expect(redirectError(try await request(fixture, overrides)) == "invalid_request", "\(overrides)")
        }
    }

    @Test("A web client may omit PKCE only with state; an operator setting can require PKCE (T01b)")
    func webWithoutPKCE() async throws {
        let fixture = try await Fixture.make()
        let base: [String: String?] = [
            "client_id": fixture.web.id.rawValue, "redirect_uri": "https://web.example/cb", "code_challenge": nil,
            "code_challenge_method": nil,
        ]
        var noState = base
        noState["state"] = .some(nil)
        #expect(redirectError(try await request(fixture, noState), to: "https://web.example/cb") == "invalid_request")
        guard case .consent = try await request(fixture, base) else { Issue.record("web without PKCE but with state"); return }

        let strict = try await Fixture.make { $0.requirePKCEForConfidentialClients = true }
        var strictBase = base
        strictBase["client_id"] = strict.web.id.rawValue
        #expect(redirectError(try await request(strict, strictBase), to: "https://web.example/cb") == "invalid_request")
    }

    @Test("T49 A missing, unknown, malformed or not-allowed scope is invalid_scope")
    func scopes() async throws {
        let fixture = try await Fixture.make()
        for scope in [nil, "", "profile frobnicate", "weight", "profile  activity", "profile\nactivity", "r%C3%A9ad"] {
            #expect(redirectError(try await request(fixture, ["scope": scope])) == "invalid_scope", "\(scope ?? "nil")")
        }
    }

    @Test("T30 A repeated parameter is invalid_request; a repeated state is not echoed")
    func repeatedParameters() async throws {
        let fixture = try await Fixture.make()
        for name in ["response_type", "scope", "code_challenge", "code_challenge_method"] {
            let value =
                name == "response_type"
                ? "code" : name == "scope" ? "profile" : name == "code_challenge_method" ? "S256" : challenge
            let step = try await request(fixture, extra: [(name, value)])
            #expect(redirectError(step) == "invalid_request", "\(name)")
        }
        let step = try await request(fixture, extra: [("state", "other")])
        #expect(redirectError(step) == "invalid_request")
        guard case .redirect(let location) = step else { return }
        #expect(Fixture.parameter("state", in: location) == nil)
    }

    @Test("T27 state is echoed byte for byte; absent stays absent")
    func stateEcho() async throws {
        let fixture = try await Fixture.make()
        let long = String(repeating: "aZ0-._~", count: 150)
        for state in [long, "a b&c=d+é", "x\r\nSet-Cookie: a=b"] {
            let step = try await request(fixture, ["state": state, "response_type": "bogus"])
            guard case .redirect(let location) = step else { Issue.record("no redirect"); continue }
            #expect(Fixture.parameter("state", in: location) == state)
            #expect(!location.contains("\r") && !location.contains("\n"))
        }
        let step = try await request(fixture, ["state": nil, "response_type": "bogus"])
        guard case .redirect(let location) = step else { return }
        #expect(Fixture.parameter("state", in: location) == nil)
    }

    @Test("T21 A loopback redirect with any port reaches the code and the same URI redeems it")
    func loopbackPort() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code(redirectURI: "http://127.0.0.1:51734/callback")
        #expect(await fixture.exchange(code, redirectURI: "http://127.0.0.1:51734/callback").value != nil)
    }

    @Test("T22 A different port at the token endpoint than at /authorize is invalid_grant")
    func loopbackPortMismatch() async throws {
        let fixture = try await Fixture.make()
        let code = try await fixture.code(redirectURI: "http://127.0.0.1:51734/callback")
        #expect(await fixture.exchange(code, redirectURI: "http://127.0.0.1:51735/callback").failure?.error.code == .invalidGrant)
    }

    @Test("T21 A native app's http://localhost redirect matches any port; refused to register when turned off")
    func localhostRedirects() async throws {
        let fixture = try await Fixture.make()
        let agent = try await fixture.admin.registerClient(
            type: .native, name: "Agent", redirectURIs: ["http://localhost:3334/callback"], scopes: ["profile"])
        let step = try await request(
            fixture, ["client_id": agent.client.id.rawValue, "redirect_uri": "http://localhost:51734/callback"])
        guard case .consent = step else { Issue.record("\(step)"); return }
        // A web app's localhost registration is its exact URI, port included.
        let web = try await fixture.admin.registerClient(
            type: .web, name: "Dev site", redirectURIs: ["http://localhost:3000/cb"], scopes: ["profile"])
        #expect(
            isErrorPage(
                try await request(fixture, ["client_id": web.client.id.rawValue, "redirect_uri": "http://localhost:3001/cb"])))

        // Turned off (localhost-redirect-uris refuse): no new registration, and one made before
        // matches only its own port.
        let refusing = try await Fixture.make { $0.acceptsLocalhostRedirects = false }
        await #expect(throws: AdministrationError.self) {
            _ = try await refusing.server.administration.registerClient(
                type: .native, name: "Agent", redirectURIs: ["http://localhost:3334/callback"], scopes: ["profile"])
        }
        let earlier = try await refusing.admin.registerClient(
            type: .native, name: "Agent", redirectURIs: ["http://localhost:3334/callback"], scopes: ["profile"])
        #expect(
            isErrorPage(
                try await request(
                    refusing, ["client_id": earlier.client.id.rawValue, "redirect_uri": "http://localhost:51734/callback"])))
    }
}
