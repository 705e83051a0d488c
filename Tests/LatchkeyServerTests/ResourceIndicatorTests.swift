import Foundation
import JWTKit
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("Resource indicators (RFC 8707) and JWT access tokens (RFC 9068)")
struct ResourceIndicatorTests {
    static let notes = "https://notes.example/api"
    static let sleep = "https://sleep.example/mcp"

    /// A fixture with two resources: notes (activity, opaque) and sleep (sleep, `format`).
    func fixture(sleepFormat: AccessTokenFormat = .opaque) async throws -> Fixture {
        let fixture = try await Fixture.make()
        _ = try await fixture.admin.addResource(
            ResourceRegistration(uri: Self.notes, name: "Notes API", scopes: ["activity", "profile"]))
        _ = try await fixture.admin.addResource(
            ResourceRegistration(uri: Self.sleep, name: "Sleep MCP", scopes: ["sleep"], tokenFormat: sleepFormat))
        return fixture
    }

    func authorize(
        _ fixture: Fixture, resources: [String], scope: String, session: BrowserSession? = nil
    ) async throws -> AuthorizationStep {
        var parameters = [
            ("response_type", "code"), ("client_id", fixture.native.id.rawValue), ("scope", scope), ("state", "s"),
            ("redirect_uri", "http://127.0.0.1:5000/callback"), ("code_challenge", Fixture.verifier.s256Challenge),
            ("code_challenge_method", "S256"),
        ]
        parameters += resources.map { ("resource", $0) }
        let session = if let session { session } else { try await fixture.signedInSession() }
        return try await fixture.server.authorization.authorize(FormParameters(parameters), session: session)
    }

    /// Authorizes for `resources` (consenting to all) and returns the code.
    func code(_ fixture: Fixture, resources: [String], scope: String, session: BrowserSession? = nil) async throws -> String {
        let session = if let session { session } else { try await fixture.signedInSession() }
        var step = try await authorize(fixture, resources: resources, scope: scope, session: session)
        if case .consent(let prompt) = step {
            let form =
                [("csrf_token", session.csrfToken), ("request", prompt.pendingID), ("decision", "allow")]
                + prompt.scopes.map { ("scope", $0.name) }
            step = try await fixture.server.authorization.decide(FormParameters(form), session: session)
        }
        guard case .redirect(let location) = step, let code = Fixture.parameter("code", in: location) else {
            throw FixtureError("no code: \(step)")
        }
        return code
    }

    func exchange(_ fixture: Fixture, _ code: String, resources: [String] = []) async -> Result<TokenResponse, TokenEndpointError>
    {
        await fixture.token(
            [
                ("grant_type", "authorization_code"), ("code", code), ("client_id", fixture.native.id.rawValue),
                ("redirect_uri", "http://127.0.0.1:5000/callback"), ("code_verifier", Fixture.verifier.value),
            ] + resources.map { ("resource", $0) })
    }

    func introspect(_ fixture: Fixture, _ token: String) async throws -> IntrospectionResponse {
        try await fixture.server.introspection.introspect(
            TokenRequest(body: FormParameters([("token", token)]), authorization: fixture.serviceBasic)
        ).get()
    }

    @Test("RI1 An unknown, malformed or fragment-bearing resource is invalid_target, sent back to the client")
    func invalidTarget() async throws {
        let fixture = try await fixture()
        for resource in ["https://elsewhere.example/api", "https://notes.example/api#x", "notes", "http://notes.example/api"] {
            let step = try await authorize(fixture, resources: [resource], scope: "activity")
            #expect(redirectError(step) == "invalid_target", "\(resource)")
        }
        // A scope none of the named resources accepts.
        #expect(redirectError(try await authorize(fixture, resources: [Self.notes], scope: "sleep")) == "invalid_scope")
        // Repeating resource is allowed (RFC 8707 §2); repeating another parameter is not.
        let both = try await authorize(fixture, resources: [Self.notes, Self.sleep], scope: "activity sleep")
        guard case .consent(let prompt) = both else { Issue.record("expected the consent page, got \(both)"); return }
        #expect(prompt.resources.map(\.uri) == [Self.notes, Self.sleep])
        #expect(prompt.redirectURI == "http://127.0.0.1:5000/callback")
    }

    @Test("RI2 The access token's audience is what was granted; introspection returns aud; no resource means no aud")
    func audience() async throws {
        let fixture = try await fixture()
        let tokens = try await exchange(fixture, try await code(fixture, resources: [Self.notes], scope: "activity")).get()
        let info = try await introspect(fixture, tokens.accessToken)
        #expect(info.active && info.audience == [Self.notes] && info.issuer == Fixture.issuer)
        #expect(info.jsonBody.contains(#""aud":"https://notes.example/api""#))
        // The documented default: a request that names no resource gets a token without an audience.
        let plain = try await fixture.exchange(try await fixture.code(scope: "activity")).get()
        let plainInfo = try await introspect(fixture, plain.accessToken)
        #expect(plainInfo.active && plainInfo.audience.isEmpty && !plainInfo.jsonBody.contains("aud"))
    }

    @Test("RI3 The token request may narrow the audience, not widen it; a refused request leaves the code usable")
    func tokenRequestNarrows() async throws {
        let fixture = try await fixture()
        let code = try await code(fixture, resources: [Self.notes, Self.sleep], scope: "activity sleep")
        #expect(await exchange(fixture, code, resources: ["https://elsewhere.example/api"]).failure?.error.code == .invalidTarget)
        let tokens = try await exchange(fixture, code, resources: [Self.sleep]).get()
        let info = try await introspect(fixture, tokens.accessToken)
        // Narrowed to the sleep resource, the token carries only the scope it accepts.
        #expect(info.audience == [Self.sleep] && info.scope == "sleep" && tokens.scope == "sleep")
        // A refresh may pick either resource of the grant, or both, but no other.
        let refresh = try #require(tokens.refreshToken)
        let toNotes = try await fixture.token(
            [
                ("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", fixture.native.id.rawValue),
                ("resource", Self.notes),
            ]
        ).get()
        let notesInfo = try await introspect(fixture, toNotes.accessToken)
        #expect(notesInfo.audience == [Self.notes] && notesInfo.scope == "activity")
        let widened = await fixture.token(
            [
                ("grant_type", "refresh_token"), ("refresh_token", try #require(toNotes.refreshToken)),
                ("client_id", fixture.native.id.rawValue), ("resource", "https://elsewhere.example/api"),
            ])
        #expect(widened.failure?.error.code == .invalidTarget)
        // Without a resource, the refreshed token is for every resource of the grant.
        let all = try await fixture.refresh(try #require(toNotes.refreshToken)).get()
        #expect(try await introspect(fixture, all.accessToken).audience == [Self.notes, Self.sleep])
    }

    @Test("RI4 Remembered consent covers the resources it was given for: another resource asks again")
    func consentPerResource() async throws {
        let fixture = try await fixture()
        let session = try await fixture.signedInSession()
        _ = try await code(fixture, resources: [Self.notes], scope: "activity", session: session)
        // The same request again is answered at once.
        guard case .redirect = try await authorize(fixture, resources: [Self.notes], scope: "activity", session: session)
        else { Issue.record("remembered consent should skip the page"); return }
        // The same scope for another resource is a new question.
        _ = try await fixture.admin.addResource(
            ResourceRegistration(uri: "https://other.example/api", name: "Other", scopes: ["activity"]))
        let other = try await authorize(fixture, resources: ["https://other.example/api"], scope: "activity", session: session)
        guard case .consent(let prompt) = other else { Issue.record("expected the consent page"); return }
        #expect(prompt.resources.map(\.name) == ["Other"])

        // Consent is per resource and scope: activity at X and sleep at Y is not sleep at X.
        for uri in ["https://x.example/api", "https://y.example/api"] {
            _ = try await fixture.admin.addResource(ResourceRegistration(uri: uri, name: uri, scopes: ["activity", "sleep"]))
        }
        _ = try await code(fixture, resources: ["https://x.example/api"], scope: "activity", session: session)
        _ = try await code(fixture, resources: ["https://y.example/api"], scope: "sleep", session: session)
        guard case .consent = try await authorize(fixture, resources: ["https://x.example/api"], scope: "sleep", session: session)
        else { Issue.record("sleep at X was never consented"); return }
    }

    @Test("RI7 An identity scope alone cannot make a token for a resource")
    func identityScopeAlone() async throws {
        let fixture = try await fixture()
        #expect(redirectError(try await authorize(fixture, resources: [Self.notes], scope: "profile")) == nil)
        #expect(redirectError(try await authorize(fixture, resources: [Self.sleep], scope: "profile")) == "invalid_scope")
        let issued = await fixture.token(
            [("grant_type", "client_credentials"), ("resource", Self.sleep), ("scope", "activity")],
            authorization: fixture.serviceBasic)
        #expect(issued.failure?.error.code == .invalidScope)
    }

    @Test(
        "RI5 A resource registered for JWTs gets an RFC 9068 token: at+jwt, signed, short-lived, still introspectable and revocable"
    )
    func jwtAccessToken() async throws {
        let fixture = try await fixture(sleepFormat: .jwt)
        let tokens = try await exchange(fixture, try await code(fixture, resources: [Self.sleep], scope: "sleep")).get()
        let header = try #require(JWSHeader(tokens.accessToken))
        #expect(header.typ == "at+jwt" && header.alg == "RS256")
        #expect(tokens.expiresIn == ProtectedResource.defaultJWTLifetime)
        let keySet = try await PublicKeySet.parse(
            Data(try await fixture.server.signingKeys.publishedKeySet(at: fixture.clock.now).utf8))
        let claims = try await keySet.verify(tokens.accessToken, as: AccessTokenClaimsForTest.self, allowed: ["RS256"]).get()
        #expect(claims.iss == Fixture.issuer && claims.aud == Self.sleep && claims.sub == fixture.alice.id.rawValue)
        #expect(claims.client_id == fixture.native.id.rawValue && claims.scope == "sleep" && claims.exp - claims.iat == 300)
        #expect(claims.jti.count >= 16)
        #expect(try await introspect(fixture, tokens.accessToken).active)
        _ = await fixture.server.revocation.revoke(
            TokenRequest(
                body: FormParameters([("token", tokens.accessToken), ("client_id", fixture.native.id.rawValue)]),
                authorization: nil))
        #expect(try await !introspect(fixture, tokens.accessToken).active)
    }

    @Test("RI6 Client credentials take resource too; the implicit grant refuses it")
    func otherGrants() async throws {
        let fixture = try await fixture()
        let issued = try await fixture.token(
            [("grant_type", "client_credentials"), ("resource", Self.sleep)], authorization: fixture.serviceBasic
        ).get()
        let info = try await introspect(fixture, issued.accessToken)
        #expect(info.audience == [Self.sleep] && info.scope == "sleep")
        let unknown = await fixture.token(
            [("grant_type", "client_credentials"), ("resource", "https://nope.example/")], authorization: fixture.serviceBasic)
        #expect(unknown.failure?.error.code == .invalidTarget)
        let implicit = try await fixture.server.authorization.authorize(
            FormParameters([
                ("response_type", "token"), ("client_id", fixture.spa.id.rawValue), ("scope", "activity"),
                ("redirect_uri", "https://spa.example/cb"), ("resource", Self.notes),
            ]), session: try await fixture.signedInSession())
        guard case .redirect(let location) = implicit else { Issue.record("expected a redirect"); return }
        #expect(location.contains("error=invalid_target"))
    }

    @Test("A resource may have its JWTs signed ES256; an audience that mixes algorithms gets RS256, which all accept")
    func es256AccessTokens() async throws {
        let fixture = try await fixture()
        let es256 = "https://fast.example/mcp"
        let resource = try await fixture.admin.addResource(
            ResourceRegistration(
                uri: es256, name: "Fast MCP", scopes: ["activity"], tokenFormat: .jwt, tokenSigningAlgorithm: .es256))
        #expect(try await fixture.store.resources(uris: ResourceSet([es256])) == [resource])
        let issued = try await fixture.token(
            [("grant_type", "client_credentials"), ("resource", es256)], authorization: fixture.serviceBasic
        ).get()
        #expect(JWSHeader(issued.accessToken)?.alg == "ES256" && JWSHeader(issued.accessToken)?.typ == "at+jwt")
        let keySet = try await PublicKeySet.parse(
            Data(try await fixture.server.signingKeys.publishedKeySet(at: fixture.clock.now).utf8))
        let claims = try await keySet.verify(issued.accessToken, as: AccessTokenClaimsForTest.self, allowed: ["ES256"]).get()
        #expect(claims.aud == es256 && claims.scope == "activity")
        // Only ES256 verifies it: the RS256 key does not.
        #expect(await keySet.verify(issued.accessToken, as: AccessTokenClaimsForTest.self, allowed: ["RS256"]).value == nil)

        _ = try await fixture.admin.addResource(
            ResourceRegistration(uri: "https://slow.example/mcp", name: "Slow MCP", scopes: ["activity"], tokenFormat: .jwt))
        let mixed = try await fixture.token(
            [("grant_type", "client_credentials"), ("resource", es256), ("resource", "https://slow.example/mcp")],
            authorization: fixture.serviceBasic
        ).get()
        #expect(JWSHeader(mixed.accessToken)?.alg == "RS256")
        // An opaque token is not signed: ES256 makes no sense there.
        await #expect(throws: AdministrationError.self) {
            _ = try await fixture.admin.addResource(
                ResourceRegistration(
                    uri: "https://opaque.example/", name: "Opaque", scopes: ["activity"], tokenSigningAlgorithm: .es256))
        }
    }

    @Test("Registering a resource checks its URI, name, scopes and lifetime")
    func registration() async throws {
        let fixture = try await fixture()
        for (uri, scopes, lifetime) in [
            ("http://api.example/", ["activity"], nil), ("https://api.example/#f", ["activity"], nil),
            ("https://api.example/", ["unknown-scope"], nil), ("https://api.example/", [], nil),
            ("https://api.example/", ["activity"], 10), (Self.notes, ["activity"], nil),
        ] as [(String, [String], Int?)] {
            await #expect(throws: AdministrationError.self, "\(uri) \(scopes)") {
                _ = try await fixture.admin.addResource(
                    ResourceRegistration(uri: uri, name: "API", scopes: scopes, accessTokenLifetime: lifetime))
            }
        }
        _ = try await fixture.admin.addResource(
            ResourceRegistration(uri: "http://127.0.0.1:9000/mcp", name: "Local", scopes: ["activity"]))
        try await fixture.admin.deleteResource(uri: Self.notes)
        #expect(try await fixture.store.resources().map(\.uri) == ["http://127.0.0.1:9000/mcp", Self.sleep])
    }
}

/// The RFC 9068 claims, decoded for checking.
struct AccessTokenClaimsForTest: JWTPayload {
    var iss: String
    var aud: String
    var sub: String
    var client_id: String
    var scope: String
    var jti: String
    var exp: Int
    var iat: Int
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
