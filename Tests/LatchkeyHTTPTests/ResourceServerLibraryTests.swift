import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyClient
import LatchkeyCore
import LatchkeyResource
import LatchkeyResourceHummingbird
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("LatchkeyResource: a resource server's checks against the real server")
struct ResourceServerLibraryTests {
    /// Two JWT resources and two opaque ones.
    static let mcpA = "http://127.0.0.1:9001/mcp"
    static let mcpC = "http://127.0.0.1:9003/mcp"
    static let apiB = "https://b.example/api"
    static let apiD = "https://d.example/api"

    struct Setup {
        var fixture: Fixture
        var live: LiveServer
        var issuer: String

        func validator(
            _ resource: String, introspect: Bool = false, later: TimeInterval = 0, acr: [String] = [], maxAge: Int? = nil
        ) -> BearerTokenValidator {
            var configuration = ResourceServerConfiguration(resource: resource, issuer: issuer, scopesSupported: ["sleep"])
            configuration.requiredACRValues = acr
            configuration.maxAuthenticationAge = maxAge
            // The whole suite runs at once on two cores in CI: the server may take longer than the
            // default five seconds to answer, and a timeout here is not what these tests check.
            configuration.requestTimeout = 120
            if introspect {
                configuration.introspection = IntrospectionCredentials(
                    endpoint: URL(string: issuer + "/oauth2/introspect")!, clientID: fixture.web.id.rawValue,
                    clientSecret: fixture.webSecret)
                configuration.introspectionCacheLifetime = 0
            }
            // The resource server's clock is the fixture's (which the tokens' times come from).
            let clock = fixture.clock
            return BearerTokenValidator(configuration: configuration, now: { clock.now.addingTimeInterval(later) })
        }

        /// A client-credentials token for `resource`.
        func token(for resource: String?) async throws -> String {
            var body = [("grant_type", "client_credentials")]
            if let resource { body.append(("resource", resource)) }
            return try await fixture.token(body, authorization: fixture.serviceBasic).get().accessToken
        }
    }

    static func start() async throws -> Setup {
        let port = try freePort()
        let issuer = "http://127.0.0.1:\(port)"
        let fixture = try await Fixture.make { $0.issuer = issuer }
        for (uri, scopes, format) in [
            (mcpA, ["sleep"], AccessTokenFormat.jwt), (mcpC, ["sleep"], .jwt), (apiB, ["activity"], .opaque),
            (apiD, ["activity"], .opaque),
        ] {
            _ = try await fixture.admin.addResource(
                ResourceRegistration(uri: uri, name: uri, scopes: scopes, tokenFormat: format))
        }
        return Setup(fixture: fixture, live: try await LiveServer.start(fixture.server, port: port), issuer: issuer)
    }

    func rejection(_ outcome: BearerTokenValidation) -> BearerChallenge? {
        if case .rejected(let challenge) = outcome { return challenge }
        return nil
    }

    @Test(
        "RI7 A JWT access token for resource A passes A's checks and fails B's; a wrong typ, signature, issuer key or age fails")
    func jwtChecks() async throws {
        let setup = try await Self.start()
        defer { Task { try? await setup.live.stop() } }
        let token = try await setup.token(for: Self.mcpA)
        let atA = setup.validator(Self.mcpA)
        guard case .valid(let info) = await atA.validate(authorization: "Bearer " + token, requiredScopes: ["sleep"]) else {
            Issue.record("resource A should accept its token")
            return
        }
        #expect(info.clientID == setup.fixture.service.id.rawValue && info.audience == [Self.mcpA] && info.scopes == ["sleep"])

        // Resource C, another JWT resource of the same server: not its audience.
        let atC = rejection(await setup.validator(Self.mcpC).validate(authorization: "Bearer " + token))
        #expect(atC?.status == 401 && atC?.error == "invalid_token" && atC?.errorDescription?.contains("aud") == true)

        // A token without the scope a request needs: 403 insufficient_scope naming it.
        let scope = rejection(await atA.validate(authorization: "Bearer " + token, requiredScopes: ["activity"]))
        #expect(scope?.status == 403 && scope?.error == "insufficient_scope" && scope?.scope == ["activity"])
        #expect(scope?.wwwAuthenticate.contains(#"scope="activity""#) == true)

        // No token: 401 with no error code, and the metadata address (RFC 9728 §5.1).
        let none = rejection(await atA.validate(authorization: nil))
        #expect(none?.status == 401 && none?.error == nil)
        #expect(
            none?.wwwAuthenticate
                == #"Bearer resource_metadata="http://127.0.0.1:9001/.well-known/oauth-protected-resource/mcp""#)

        // A tampered signature, alg none and an ID token (typ JWT) are refused.
        var parts = token.split(separator: ".").map(String.init)
        parts[2] = String(parts[2].reversed())
        #expect(rejection(await atA.validate(authorization: "Bearer " + parts.joined(separator: ".")))?.error == "invalid_token")
        let none64 = Base64URL.encode(Data(#"{"alg":"none","typ":"at+jwt"}"#.utf8))
        let forgedNone = none64 + "." + token.split(separator: ".")[1] + "."
        #expect(rejection(await atA.validate(authorization: "Bearer " + forgedNone))?.error == "invalid_token")
        let rp = try await RelyingParty.make(setup.fixture)
        let idToken = try #require(try await rp.tokens(session: try await setup.fixture.signedInSession()).idToken)
        let typ = rejection(await atA.validate(authorization: "Bearer " + idToken))
        #expect(typ?.error == "invalid_token" && typ?.errorDescription?.contains("typ") == true)

        // A token made by another server with the same issuer name and resource: its key is not published here.
        let impostor = try await Fixture.make { $0.issuer = setup.issuer }
        _ = try await impostor.admin.addResource(
            ResourceRegistration(uri: Self.mcpA, name: "A", scopes: ["sleep"], tokenFormat: .jwt))
        let foreign = try await impostor.token(
            [("grant_type", "client_credentials"), ("resource", Self.mcpA)], authorization: impostor.serviceBasic
        ).get().accessToken
        #expect(rejection(await atA.validate(authorization: "Bearer " + foreign))?.error == "invalid_token")

        // Expired: the same token five minutes and a bit later.
        let late = setup.validator(Self.mcpA, later: 320)
        #expect(rejection(await late.validate(authorization: "Bearer " + token))?.errorDescription == "The token has expired.")
        // A malformed header is 400 invalid_request.
        #expect(rejection(await atA.validate(authorization: "Basic abc"))?.status == 400)
    }

    @Test("DPoP-bound tokens, JWT and opaque: only as Authorization: DPoP with a fresh proof by their key for this request")
    func dpopBound() async throws {
        let setup = try await Self.start()
        defer { Task { try? await setup.live.stop() } }
        let key = DPoPKey()
        func boundToken(for resource: String) async throws -> String {
            let proof = try await key.proof(
                method: "POST", url: URL(string: setup.issuer + "/oauth2/token")!, issuedAt: setup.fixture.clock.now)
            return try await setup.fixture.server.tokenEndpoint.token(
                TokenRequest(
                    body: FormParameters([("grant_type", "client_credentials"), ("resource", resource)]),
                    authorization: setup.fixture.serviceBasic, dpop: proof)
            ).get().accessToken
        }
        for (resource, introspect) in [(Self.mcpA, false), (Self.apiB, true)] {
            let token = try await boundToken(for: resource)
            let validator = setup.validator(resource, introspect: introspect)
            let url = URL(string: resource)!
            let proof = try await key.proof(method: "GET", url: url, accessToken: token, issuedAt: setup.fixture.clock.now)
            func request(_ proof: String?) -> DPoPRequest { DPoPRequest(proof: proof, method: "GET", url: resource) }
            guard case .valid(let info) = await validator.validate(authorization: "DPoP " + token, dpop: request(proof))
            else {
                Issue.record("a bound token with its proof was refused at \(resource)")
                return
            }
            #expect(info.keyThumbprint == key.thumbprint)
            // The same proof again, a proof by another key, none, or for another method: refused.
            let replay = rejection(await validator.validate(authorization: "DPoP " + token, dpop: request(proof)))
            #expect(replay?.error == "invalid_dpop_proof" && replay?.wwwAuthenticate.hasPrefix("DPoP algs=") == true)
            let thief = try await DPoPKey().proof(
                method: "GET", url: url, accessToken: token, issuedAt: setup.fixture.clock.now)
            #expect(
                rejection(await validator.validate(authorization: "DPoP " + token, dpop: request(thief)))?.error
                    == "invalid_dpop_proof")
            #expect(
                rejection(await validator.validate(authorization: "DPoP " + token, dpop: request(nil)))?.error
                    == "invalid_dpop_proof")
            let post = try await key.proof(method: "POST", url: url, accessToken: token, issuedAt: setup.fixture.clock.now)
            #expect(
                rejection(await validator.validate(authorization: "DPoP " + token, dpop: request(post)))?.error
                    == "invalid_dpop_proof")
            // As a bearer token it is refused.
            let bearer = rejection(await validator.validate(authorization: "Bearer " + token))
            #expect(bearer?.error == "invalid_token" && bearer?.errorDescription?.contains("DPoP") == true)
        }
        // A bearer token sent with the DPoP scheme is refused too.
        let plain = try await setup.token(for: Self.mcpA)
        let proof = try await key.proof(
            method: "GET", url: URL(string: Self.mcpA)!, accessToken: plain, issuedAt: setup.fixture.clock.now)
        #expect(
            rejection(
                await setup.validator(Self.mcpA).validate(
                    authorization: "DPoP " + plain, dpop: DPoPRequest(proof: proof, method: "GET", url: Self.mcpA)))?.error
                == "invalid_token")
    }

    @Test("RV18 A full proof memory refuses new DPoP proofs rather than forget a live one, and takes them once the old expire")
    func dpopMemoryNeverForgetsLiveProofs() async throws {
        let setup = try await Self.start()
        defer { Task { try? await setup.live.stop() } }
        let key = DPoPKey()
        let fixture = setup.fixture
        let tokenProof = try await key.proof(
            method: "POST", url: URL(string: setup.issuer + "/oauth2/token")!, issuedAt: fixture.clock.now)
        let token = try await fixture.server.tokenEndpoint.token(
            TokenRequest(
                body: FormParameters([("grant_type", "client_credentials"), ("resource", Self.mcpA)]),
                authorization: fixture.serviceBasic, dpop: tokenProof)
        ).get().accessToken
        var configuration = ResourceServerConfiguration(resource: Self.mcpA, issuer: setup.issuer)
        configuration.dpopProofMemory = 3
        configuration.requestTimeout = 120  // as in Setup.validator: the suite's load is not what this checks
        let clock = fixture.clock
        let validator = BearerTokenValidator(configuration: configuration, now: { clock.now })
        func present(_ proof: String) async -> BearerTokenValidation {
            await validator.validate(
                authorization: "DPoP " + token, dpop: DPoPRequest(proof: proof, method: "GET", url: Self.mcpA))
        }
        func proof() async throws -> String {
            try await key.proof(method: "GET", url: URL(string: Self.mcpA)!, accessToken: token, issuedAt: clock.now)
        }
        var accepted: [String] = []
        for _ in 0..<3 {
            let fresh = try await proof()
            let validation = await present(fresh)
            guard case .valid = validation else {
                Issue.record("a fresh proof was refused: \(validation)")
                return
            }
            accepted.append(fresh)
        }
        // Full: a fourth is refused, and every remembered one still counts as used.
        #expect(rejection(await present(try await proof()))?.error == "invalid_dpop_proof")
        for used in accepted {
            #expect(rejection(await present(used))?.errorDescription?.contains("used before") == true)
        }
        // Once they are too old to pass, there is room again.
        clock.advance(by: 200)
        guard case .valid = await present(try await proof()) else {
            Issue.record("a fresh proof should pass once the old ones expired")
            return
        }
    }

    @Test("RI8 An opaque token is checked by introspection: good for its resource, refused by another, refused once revoked")
    func introspection() async throws {
        let setup = try await Self.start()
        defer { Task { try? await setup.live.stop() } }
        let token = try await setup.token(for: Self.apiB)
        let atB = setup.validator(Self.apiB, introspect: true)
        let outcome = await atB.validate(authorization: "Bearer " + token, requiredScopes: ["activity"])
        guard case .valid(let info) = outcome else {
            Issue.record("resource B should accept its token: \(outcome)")
            return
        }
        #expect(info.audience == [Self.apiB] && info.scopes == ["activity"])
        let atD = rejection(await setup.validator(Self.apiD, introspect: true).validate(authorization: "Bearer " + token))
        #expect(atD?.error == "invalid_token")
        // A token that names no resource is for no resource server.
        let plain = try await setup.token(for: nil)
        #expect(rejection(await atB.validate(authorization: "Bearer " + plain))?.error == "invalid_token")
        // A JWT for A is introspected too when sent to B, and refused there.
        let forA = try await setup.token(for: Self.mcpA)
        #expect(rejection(await atB.validate(authorization: "Bearer " + forA))?.error == "invalid_token")
        _ = await setup.fixture.server.revocation.revoke(
            TokenRequest(body: FormParameters([("token", token)]), authorization: setup.fixture.serviceBasic))
        #expect(rejection(await atB.validate(authorization: "Bearer " + token))?.errorDescription == "The token is not active.")
    }

    @Test("RV5 A refresh token is never taken for an access token, even when introspection calls it active")
    func refreshTokenRefused() async throws {
        let setup = try await Self.start()
        defer { Task { try? await setup.live.stop() } }
        let fixture = setup.fixture
        // The resource server introspects as the web app, so the web app's own refresh token for B is
        // active to it, with B in its audience: only token_type tells it apart.
        let code = try await fixture.code(
            client: fixture.web, scope: "activity", redirectURI: "https://web.example/cb", resource: Self.apiB)
        let tokens = try await fixture.token(
            [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", "https://web.example/cb"),
                ("code_verifier", Fixture.verifier.value),
            ], authorization: fixture.webBasic
        ).get()
        let atB = setup.validator(Self.apiB, introspect: true)
        guard case .valid = await atB.validate(authorization: "Bearer " + tokens.accessToken, requiredScopes: ["activity"])
        else {
            Issue.record("resource B should accept the access token")
            return
        }
        let refused = rejection(await atB.validate(authorization: "Bearer " + tokens.refreshToken!))
        #expect(refused?.error == "invalid_token")
        #expect(refused?.errorDescription?.contains("not an access token") == true)
    }

    @Test("RFC 9470 A sign-in weaker or older than the resource requires gets 401 insufficient_user_authentication")
    func stepUpChallenge() async throws {
        let setup = try await Self.start()
        defer { Task { try? await setup.live.stop() } }
        let fixture = setup.fixture
        let one = "urn:latchkey:acr:1"
        let two = "urn:latchkey:acr:2"
        let user = try await fixture.exchange(try await fixture.code(scope: "sleep", resource: Self.mcpA)).get().accessToken
        // A password sign-in: the JWT says acr 1, and when.
        guard case .valid(let info) = await setup.validator(Self.mcpA).validate(authorization: "Bearer " + user) else {
            Issue.record("resource A should accept a user's token when it requires nothing of the sign-in")
            return
        }
        #expect(info.acr == one)
        let authTime = try #require(info.authTime)
        #expect(abs(authTime.timeIntervalSince(fixture.clock.now)) < 2)

        // Two factors required: the password's token is refused, with the challenge naming them.
        let strict = setup.validator(Self.mcpA, acr: [two])
        let refused = rejection(await strict.validate(authorization: "Bearer " + user, requiredScopes: ["sleep"]))
        #expect(refused?.status == 401 && refused?.error == "insufficient_user_authentication")
        #expect(refused?.acrValues == [two] && refused?.maxAge == nil)
        let expected =
            #"Bearer resource_metadata="http://127.0.0.1:9001/.well-known/oauth-protected-resource/mcp", "#
            + #"error="insufficient_user_authentication", error_description="A different authentication level is required.", "#
            + #"acr_values="urn:latchkey:acr:2""#
        #expect(refused?.wwwAuthenticate == expected)
        let body =
            #"{"error":"insufficient_user_authentication","#
            + #""error_description":"A different authentication level is required."}"#
        #expect(refused?.jsonBody == body)
        // Any one of the values will do.
        guard case .valid = await setup.validator(Self.mcpA, acr: [two, one]).validate(authorization: "Bearer " + user) else {
            Issue.record("acr 1 is one of the values asked for")
            return
        }
        // A client's own token says neither acr nor auth_time: it meets neither requirement.
        let service = try await setup.token(for: Self.mcpA)
        #expect(rejection(await strict.validate(authorization: "Bearer " + service))?.error == "insufficient_user_authentication")
        let ageless = rejection(await setup.validator(Self.mcpA, maxAge: 3600).validate(authorization: "Bearer " + service))
        #expect(ageless?.errorDescription == "A more recent authentication is required.")

        // max_age: a minute after the sign-in, 120 s is recent enough and 30 s is not (the token lives 300 s).
        guard case .valid = await setup.validator(Self.mcpA, later: 60, maxAge: 120).validate(authorization: "Bearer " + user)
        else {
            Issue.record("a sign-in a minute old is within 120 s")
            return
        }
        let old = rejection(await setup.validator(Self.mcpA, later: 60, maxAge: 30).validate(authorization: "Bearer " + user))
        #expect(old?.status == 401 && old?.error == "insufficient_user_authentication")
        #expect(old?.errorDescription == "A more recent authentication is required.")
        let recent = #"error_description="A more recent authentication is required.", max_age="30""#
        #expect(old?.wwwAuthenticate.hasSuffix(recent) == true)
        // Both requirements are named, met or not, so that one new sign-in meets them all.
        let both = rejection(
            await setup.validator(Self.mcpA, later: 60, acr: [two], maxAge: 30).validate(authorization: "Bearer " + user))
        #expect(both?.wwwAuthenticate.hasSuffix(#"acr_values="urn:latchkey:acr:2", max_age="30""#) == true)

        // The check on its own: a two-factor sign-in passes; one without a time does not meet max_age.
        var twoFactors = info
        twoFactors.acr = two
        #expect(await strict.stepUpChallenge(for: twoFactors) == nil)
        twoFactors.authTime = nil
        let timeless = await setup.validator(Self.mcpA, acr: [two], maxAge: 600).stepUpChallenge(for: twoFactors)
        #expect(timeless?.errorDescription == "A more recent authentication is required.")
        #expect(timeless?.acrValues == [two] && timeless?.maxAge == 600)

        // The Hummingbird middleware answers with the same challenge.
        let router = Router(context: ResourceRequestContext.self)
        router.group("mcp").add(middleware: BearerTokenMiddleware(strict, requiredScopes: ["sleep"]))
            .post { _, _ in "tools" }
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/mcp", method: .post, headers: [.authorization: "Bearer " + user]) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.wwwAuthenticate] == expected)
            }
        }

        // An opaque token: introspection says acr and auth_time too (RFC 9470 §6.2).
        let opaque = try await fixture.exchange(try await fixture.code(resource: Self.apiB)).get().accessToken
        let introspecting = setup.validator(Self.apiB, introspect: true, acr: [one])
        guard case .valid(let introspected) = await introspecting.validate(authorization: "Bearer " + opaque) else {
            Issue.record("introspection should give the opaque token's acr")
            return
        }
        #expect(introspected.acr == one && introspected.authTime == authTime)
        let opaqueRefused = rejection(
            await setup.validator(Self.apiB, introspect: true, acr: [two]).validate(authorization: "Bearer " + opaque))
        #expect(opaqueRefused?.error == "insufficient_user_authentication")
    }

    @Test("RV7 /userinfo refuses a token minted for a resource: the resource server it was sent to cannot read the user")
    func userinfoRefusesResourceTokens() async throws {
        let setup = try await Self.start()
        defer { Task { try? await setup.live.stop() } }
        let fixture = setup.fixture
        let forB = try await fixture.exchange(try await fixture.code(resource: Self.apiB)).get()
        #expect(forB.scope.contains("profile"))
        #expect(try await fixture.server.userInfo.claims(authorization: "Bearer " + forB.accessToken).failure == .invalidToken)
        let plain = try await fixture.exchange(try await fixture.code()).get()
        #expect(try await fixture.server.userInfo.claims(authorization: "Bearer " + plain.accessToken).value?.sub != nil)
    }

    @Test("The Hummingbird middleware answers 401 and 403 with WWW-Authenticate and serves the RFC 9728 document")
    func middleware() async throws {
        let setup = try await Self.start()
        defer { Task { try? await setup.live.stop() } }
        let validator = setup.validator(Self.mcpA)
        let router = Router(context: ResourceRequestContext.self)
        router.addProtectedResourceMetadata(validator.configuration)
        router.group("mcp").add(middleware: BearerTokenMiddleware(validator, requiredScopes: ["sleep"]))
            .post { _, context in context.accessToken?.clientID ?? "none" }
        let token = try await setup.token(for: Self.mcpA)
        let cc = try await setup.token(for: Self.apiB)
        let app = Application(router: router)
        try await app.test(.router) { client in
            try await client.execute(uri: "/.well-known/oauth-protected-resource/mcp", method: .get) { response in
                let document = try JSONDecoder().decode(ProtectedResourceMetadata.self, from: Data(buffer: response.body))
                #expect(document.resource == Self.mcpA && document.authorizationServers == [setup.issuer])
                #expect(document.scopesSupported == ["sleep"] && document.bearerMethodsSupported == ["header"])
            }
            try await client.execute(uri: "/mcp", method: .post) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.wwwAuthenticate]?.hasPrefix(#"Bearer resource_metadata=""#) == true)
            }
            // A token in the query is never read (RFC 6750 §2.3 is not offered; OAuth 2.1 §5.1).
            try await client.execute(uri: "/mcp?access_token=" + token, method: .post) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.wwwAuthenticate]?.contains("error=") == false)
            }
            try await client.execute(uri: "/mcp", method: .post, headers: [.authorization: "Bearer " + cc]) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
            }
            try await client.execute(uri: "/mcp", method: .post, headers: [.authorization: "Bearer " + token]) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == setup.fixture.service.id.rawValue)
            }
            // A DPoP-bound token: its proof names the resource's public URL for this path and method.
            let key = DPoPKey()
            let now = setup.fixture.clock.now
            let bound = try await setup.fixture.server.tokenEndpoint.token(
                TokenRequest(
                    body: FormParameters([("grant_type", "client_credentials"), ("resource", Self.mcpA)]),
                    authorization: setup.fixture.serviceBasic,
                    dpop: try await key.proof(method: "POST", url: URL(string: setup.issuer + "/oauth2/token")!, issuedAt: now))
            ).get().accessToken
            let proof = try await key.proof(method: "POST", url: URL(string: Self.mcpA)!, accessToken: bound, issuedAt: now)
            let dpop = HTTPField.Name("DPoP")!
            try await client.execute(
                uri: "/mcp", method: .post, headers: [.authorization: "DPoP " + bound, dpop: proof]
            ) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(
                uri: "/mcp", method: .post, headers: [.authorization: "DPoP " + bound, dpop: proof]
            ) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.wwwAuthenticate]?.contains(#"error="invalid_dpop_proof""#) == true)
            }
            // A proof made for another path of the same origin does not pass for /mcp.
            let elsewhere = try await key.proof(
                method: "POST", url: URL(string: "http://127.0.0.1:9001/other")!, accessToken: bound, issuedAt: now)
            try await client.execute(
                uri: "/mcp", method: .post, headers: [.authorization: "DPoP " + bound, dpop: elsewhere]
            ) { response in
                #expect(response.status == .unauthorized)
            }
        }
    }
}
