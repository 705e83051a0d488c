import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Pushed authorization requests (RFC 9126) on the endpoint logic, without a socket.
@Suite("Pushed authorization requests")
struct PushedAuthorizationTests {
    let redirectURI = "http://127.0.0.1:5000/callback"

    /// The native client's authorization request, as pushed.
    func parameters(_ fixture: Fixture, client: Client? = nil, state: String = "s1", scope: String = "profile")
        -> [(String, String)]
    {
        [
            ("response_type", "code"), ("client_id", (client ?? fixture.native).id.rawValue), ("redirect_uri", redirectURI),
            ("scope", scope), ("state", state), ("code_challenge", Fixture.verifier.s256Challenge),
            ("code_challenge_method", "S256"),
        ]
    }

    func push(_ fixture: Fixture, _ parameters: [(String, String)], authorization: String? = nil) async
        -> Result<PushedAuthorizationResponse, TokenEndpointError>
    {
        await fixture.server.pushedAuthorization.pushAuthorizationRequest(
            TokenRequest(body: FormParameters(parameters), authorization: authorization))
    }

    func pushed(_ fixture: Fixture, _ parameters: [(String, String)], authorization: String? = nil) async throws
        -> PushedAuthorizationResponse
    {
        switch await push(fixture, parameters, authorization: authorization) {
        case .success(let response): return response
        case .failure(let failure): throw FixtureError("push refused: \(failure.error)")
        }
    }

    func pushError(_ fixture: Fixture, _ parameters: [(String, String)], authorization: String? = nil) async -> String? {
        if case .failure(let failure) = await push(fixture, parameters, authorization: authorization) {
            return failure.error.code.rawValue
        }
        return nil
    }

    /// The browser's visit: only `client_id` and `request_uri` (and whatever an attacker adds).
    func visit(
        _ fixture: Fixture, requestURI: String, clientID: String? = nil, extra: [(String, String)] = [],
        session: BrowserSession? = nil
    ) async throws -> AuthorizationStep {
        let session = if let session { session } else { try await fixture.signedInSession() }
        return try await fixture.server.authorization.authorize(
            FormParameters([("client_id", clientID ?? fixture.native.id.rawValue), ("request_uri", requestURI)] + extra),
            session: session)
    }

    func errorPageCode(_ step: AuthorizationStep) -> String? {
        if case .errorPage(let error) = step { return error.code.rawValue }
        return nil
    }

    @Test("A pushed request is used through its request_uri: consent, code, tokens")
    func roundTrip() async throws {
        let fixture = try await Fixture.make()
        let response = try await pushed(fixture, parameters(fixture, scope: "profile activity"))
        #expect(response.requestURI.hasPrefix("urn:ietf:params:oauth:request_uri:lk_pr_"))
        #expect(response.expiresIn == 60)
        let session = try await fixture.signedInSession()
        let step = try await visit(fixture, requestURI: response.requestURI, session: session)
        guard case .consent(let prompt) = step else { Issue.record("expected consent, got \(step)"); return }
        #expect(prompt.scopes.map(\.name) == ["profile", "activity"])
        let decided = try await fixture.server.authorization.decide(
            FormParameters([
                ("csrf_token", session.csrfToken), ("request", prompt.pendingID), ("decision", "allow"), ("scope", "profile"),
            ]), session: session)
        guard case .redirect(let location) = decided, let code = Fixture.parameter("code", in: location) else {
            Issue.record("expected a code, got \(decided)")
            return
        }
        #expect(location.hasPrefix(redirectURI + "?"))
        #expect(Fixture.parameter("state", in: location) == "s1")
        guard case .success(let tokens) = await fixture.exchange(code) else { Issue.record("exchange failed"); return }
        #expect(tokens.scope == "profile")
    }

    @Test("A confidential client pushes with HTTP Basic and need not repeat client_id in the body")
    func confidentialClient() async throws {
        let fixture = try await Fixture.make()
        var body = parameters(fixture, client: fixture.web).filter { $0.0 != "client_id" }
        body = body.map { $0.0 == "redirect_uri" ? ($0.0, "https://web.example/cb") : $0 }
        let response = try await pushed(fixture, body, authorization: fixture.webBasic)
        let step = try await visit(fixture, requestURI: response.requestURI, clientID: fixture.web.id.rawValue)
        guard case .consent = step else { Issue.record("expected consent, got \(step)"); return }
        // A wrong secret is invalid_client, and nothing is pushed.
        let wrong = "Basic " + Data("\(fixture.web.id):nope".utf8).base64EncodedString()
        #expect(await pushError(fixture, body, authorization: wrong) == "invalid_client")
        // A confidential client may not push as if it were public.
        #expect(await pushError(fixture, parameters(fixture, client: fixture.web)) == "invalid_client")
    }

    @Test("PAR1 A request_uri works once: a second visit gets an error page")
    func singleUse() async throws {
        let fixture = try await Fixture.make()
        let response = try await pushed(fixture, parameters(fixture))
        guard case .consent = try await visit(fixture, requestURI: response.requestURI) else {
            Issue.record("the first visit should reach consent")
            return
        }
        #expect(errorPageCode(try await visit(fixture, requestURI: response.requestURI)) == "invalid_request_uri")
    }

    @Test("PAR2 A request_uri expires after 60 seconds")
    func expiry() async throws {
        let fixture = try await Fixture.make()
        let response = try await pushed(fixture, parameters(fixture))
        fixture.clock.advance(by: 61)
        #expect(errorPageCode(try await visit(fixture, requestURI: response.requestURI)) == "invalid_request_uri")
    }

    @Test("PAR3 Another client cannot use a request_uri, and its attempt does not spend it")
    func otherClient() async throws {
        let fixture = try await Fixture.make()
        let response = try await pushed(fixture, parameters(fixture))
        let stolen = try await visit(fixture, requestURI: response.requestURI, clientID: fixture.native2.id.rawValue)
        #expect(errorPageCode(stolen) == "invalid_request_uri")
        guard case .consent = try await visit(fixture, requestURI: response.requestURI) else {
            Issue.record("the pushing client's own visit should still work")
            return
        }
    }

    @Test("PAR4 Parameters added in the browser's URL are ignored: only the pushed ones count")
    func urlParametersIgnored() async throws {
        let fixture = try await Fixture.make()
        let response = try await pushed(fixture, parameters(fixture))
        let step = try await visit(
            fixture, requestURI: response.requestURI,
            extra: [("redirect_uri", "com.example.notes:/oauth2redirect"), ("scope", "profile sleep"), ("state", "evil")])
        guard case .consent(let prompt) = step else { Issue.record("expected consent, got \(step)"); return }
        #expect(prompt.scopes.map(\.name) == ["profile"])
        #expect(prompt.redirectURI == redirectURI)
    }

    @Test("PAR5 A made-up or malformed request_uri gets an error page, never a redirect")
    func unknownRequestURI() async throws {
        let fixture = try await Fixture.make()
        for uri in [
            "urn:ietf:params:oauth:request_uri:lk_pr_" + String(repeating: "A", count: 43), "https://attacker.example/req",
            "", "urn:ietf:params:oauth:request_uri:\u{0}",
        ] {
            #expect(errorPageCode(try await visit(fixture, requestURI: uri)) != nil, "\(uri)")
        }
    }

    @Test("PAR6 A request the authorization endpoint would refuse is refused at the push, as JSON")
    func validatedAtPush() async throws {
        let fixture = try await Fixture.make()
        func without(_ name: String) -> [(String, String)] { parameters(fixture).filter { $0.0 != name } }
        #expect(await pushError(fixture, without("code_challenge")) == "invalid_request")
        #expect(
            await pushError(
                fixture, parameters(fixture).map { $0.0 == "redirect_uri" ? ($0.0, "https://attacker.example/cb") : $0 })
                == "invalid_request")
        #expect(await pushError(fixture, parameters(fixture, scope: "admin")) == "invalid_scope")
        #expect(await pushError(fixture, parameters(fixture) + [("request_uri", "urn:x")]) == "invalid_request")
        #expect(await pushError(fixture, parameters(fixture) + [("request", "eyJ")]) == "request_not_supported")
        #expect(await pushError(fixture, without("client_id")) == "invalid_client")
        #expect(await pushError(fixture, parameters(fixture) + [("state", "again")]) == "invalid_request")
        #expect(
            await pushError(fixture, parameters(fixture) + [("client_id", fixture.native2.id.rawValue)])
                == "invalid_request")
        // A service client has no redirect URI, so no authorization request of it can pass.
        let service = parameters(fixture, client: fixture.service).filter { $0.0 != "client_id" }
        #expect(await pushError(fixture, service, authorization: fixture.serviceBasic) == "invalid_request")
    }

    @Test("PAR7 A client registered to push is refused without a push, with an error back at its redirect URI")
    func requiredPerClient() async throws {
        let fixture = try await Fixture.make()
        let pushing = try await fixture.admin.registerClient(
            type: .native, name: "Pusher", redirectURIs: [redirectURI], scopes: ["profile"],
            requirePushedAuthorizationRequests: true
        ).client
        #expect(pushing.requirePushedAuthorizationRequests)
        let direct = try await fixture.server.authorization.authorize(
            FormParameters(parameters(fixture, client: pushing)), session: fixture.signedInSession())
        guard case .redirect(let location) = direct else { Issue.record("expected a redirect, got \(direct)"); return }
        #expect(Fixture.parameter("error", in: location) == "invalid_request")
        #expect(Fixture.parameter("code", in: location) == nil)
        let response = try await pushed(fixture, parameters(fixture, client: pushing))
        guard case .consent = try await visit(fixture, requestURI: response.requestURI, clientID: pushing.id.rawValue)
        else {
            Issue.record("the pushed request should reach consent")
            return
        }
        // Other clients are not affected.
        guard
            case .consent = try await fixture.server.authorization.authorize(
                FormParameters(parameters(fixture)), session: fixture.signedInSession())
        else {
            Issue.record("a client not registered to push may still send its request in the URL")
            return
        }
        #expect(try await fixture.server.metadata().requirePushedAuthorizationRequests == false)
    }

    @Test("PAR8 Server-wide, every client must push, and the metadata says so")
    func requiredServerWide() async throws {
        let fixture = try await Fixture.make { $0.requirePushedAuthorizationRequests = true }
        let metadata = try await fixture.server.metadata()
        #expect(metadata.requirePushedAuthorizationRequests == true)
        #expect(metadata.pushedAuthorizationRequestEndpoint == Fixture.issuer + "/oauth2/par")
        let direct = try await fixture.server.authorization.authorize(
            FormParameters(parameters(fixture)), session: fixture.signedInSession())
        guard case .redirect(let location) = direct else { Issue.record("expected a redirect, got \(direct)"); return }
        #expect(Fixture.parameter("error", in: location) == "invalid_request")
        let response = try await pushed(fixture, parameters(fixture))
        guard case .consent = try await visit(fixture, requestURI: response.requestURI) else {
            Issue.record("the pushed request should reach consent")
            return
        }
    }

    @Test("RV19 A push keeps only the parameters the authorization endpoint reads, and pushes are counted per client")
    func pushKeepsLittle() async throws {
        let fixture = try await Fixture.make { $0.pushedRequestsPerClient = 3 }
        let junk = String(repeating: "x", count: 8000)
        let extra = (0..<6).map { ("x_junk\($0)", junk) } + [("ui_locales", "fr")]
        let response = try await pushed(fixture, parameters(fixture) + extra)
        let stored = try #require(
            try await fixture.store.takePushedRequest(
                hash: RandomToken.hash(response.requestURI), clientID: fixture.native.id))
        #expect(!stored.parameters.contains("x_junk") && !stored.parameters.contains("ui_locales"))
        #expect(stored.parameters.contains("code_challenge") && stored.parameters.count < 400)
        _ = try await pushed(fixture, parameters(fixture))
        _ = try await pushed(fixture, parameters(fixture))
        guard case .failure(let refused) = await push(fixture, parameters(fixture)) else {
            Issue.record("the fourth push in a minute should be refused")
            return
        }
        #expect(refused.error.code == .temporarilyUnavailable && (refused.retryAfter ?? 0) > 0)
        // Another client is not affected, and the count starts again with the next minute.
        _ = try await pushed(fixture, parameters(fixture, client: fixture.personal))
        fixture.clock.advance(by: 61)
        _ = try await pushed(fixture, parameters(fixture))
        // What is kept is bounded in all: a state and a nonce of 6,000 bytes each are too much.
        let long = String(repeating: "n", count: 6000)
        #expect(await pushError(fixture, parameters(fixture, state: long) + [("nonce", long)]) == "invalid_request")
    }

    @Test("A service client cannot be registered to push")
    func serviceCannotRequirePush() async throws {
        let fixture = try await Fixture.make()
        await #expect(throws: AdministrationError.self) {
            _ = try await fixture.admin.registerClient(
                type: .service, name: "Batch", redirectURIs: [], scopes: ["activity"],
                requirePushedAuthorizationRequests: true)
        }
    }

    @Test("Expired pushed requests are purged")
    func purged() async throws {
        let fixture = try await Fixture.make()
        let response = try await pushed(fixture, parameters(fixture))
        fixture.clock.advance(by: 120)
        _ = try await fixture.store.purgeExpired(at: fixture.clock.now, retention: 0, activityRetention: 86_400)
        fixture.clock.advance(by: -120)
        #expect(errorPageCode(try await visit(fixture, requestURI: response.requestURI)) == "invalid_request_uri")
    }
}
