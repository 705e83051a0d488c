import Crypto
import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// The JWT bearer grant (RFC 7523 §2.1) and identity assertion grants (`oauth-id-jag+jwt`):
/// assertions from an upstream provider an administrator trusts (docs/threat-model.md JA1–JA7).
@Suite("JWT bearer and identity assertion grants")
struct JWTBearerGrantTests {
    static let idp = "https://idp.example"
    static let notes = "https://notes.example/api"
    let key = P256.Signing.PrivateKey()

    /// The provider's keys, as its `jwks_uri` would give them.
    struct StaticKeys: AssertionIssuerKeys {
        var json: String
        func keySet(of provider: IdentityProvider, missing kid: String?, now: Date) async
            -> Result<AssertionKeySet, JWTAssertion.Rejection>
        {
            do throws(JWTAssertion.Rejection) { return .success(try AssertionKeySet(json: Data(json.utf8))) } catch {
                return .failure(error)
            }
        }
    }

    struct Setup {
        var fixture: Fixture
        var agent: Client
        var agentBasic: String
    }

    /// A fixture with the provider `corp` (assertions accepted), alice linked to its user
    /// `u-alice`, a notes resource, and a web client allowed the grant.
    func setup(accepts: Bool = true, linksVerifiedEmail: Bool = false, allowed: Bool = true) async throws -> Setup {
        let jwks = #"{"keys":[\#(PublicJWK(key.publicKey).json(adding: [("kid", "idp-1")]))]}"#
        let fixture = try await Fixture.make(assertionIssuerKeys: StaticKeys(json: jwks))
        var registration = IdentityProviderRegistration(name: "corp", issuer: Self.idp, clientID: "latchkey-at-corp")
        registration.acceptsAssertions = accepts
        registration.linksVerifiedEmail = linksVerifiedEmail
        _ = try await fixture.admin.addIdentityProvider(registration, keyEncryptionKey: Fixture.keyEncryptionKey)
        _ = try await fixture.store.insertFederatedIdentity(
            FederatedIdentity(
                provider: "corp", subject: "u-alice", userID: fixture.alice.id, email: nil, createdAt: fixture.clock.now))
        _ = try await fixture.admin.addResource(ResourceRegistration(uri: Self.notes, name: "Notes API", scopes: ["activity"]))
        let defaults = GrantRegistry.standard.defaultGrantTypes(for: .web)
        let registered = try await fixture.admin.registerClient(
            ClientSettings(
                type: .web, name: "Agent", redirectURIs: ["https://agent.example/cb"], scopes: ["profile", "activity"],
                grantTypes: allowed ? defaults + [GrantTypes.jwtBearer] : defaults))
        let basic = "Basic " + Data("\(registered.client.id):\(registered.secret ?? "")".utf8).base64EncodedString()
        return Setup(fixture: fixture, agent: registered.client, agentBasic: basic)
    }

    /// An assertion signed by the provider's key (or `signer`), with `claims` over the defaults
    /// of an identity assertion grant for `setup`'s agent.
    func assertion(
        _ setup: Setup, type: String? = "oauth-id-jag+jwt", _ claims: [String: Any] = [:], remove: [String] = [],
        signer: P256.Signing.PrivateKey? = nil
    ) throws -> String {
        let now = Int(setup.fixture.clock.now.timeIntervalSince1970)
        var header: [String: Any] = ["alg": "ES256", "kid": "idp-1"]
        if let type { header["typ"] = type }
        var body: [String: Any] = [
            "iss": Self.idp, "sub": "u-alice", "aud": Fixture.issuer, "client_id": setup.agent.id.rawValue,
            "jti": UUID().uuidString, "iat": now, "exp": now + 300, "resource": Self.notes, "scope": "activity",
        ]
        body.merge(claims) { $1 }
        for name in remove { body[name] = nil }
        let input = [header, body].map { Base64URL.encode(try! JSONSerialization.data(withJSONObject: $0)) }.joined(
            separator: ".")
        let signature = try (signer ?? key).signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    func grant(_ setup: Setup, _ assertion: String, extra: [(String, String)] = [], authorization: String? = nil) async
        -> Result<TokenResponse, TokenEndpointError>
    {
        await setup.fixture.token(
            [("grant_type", GrantTypes.jwtBearer), ("assertion", assertion)] + extra,
            authorization: authorization ?? setup.agentBasic)
    }

    @Test("An identity assertion grant gives the linked user's token for its resource and scope, without a refresh token")
    func accepted() async throws {
        let setup = try await setup()
        let token = try await grant(setup, try assertion(setup)).get()
        #expect(token.userID == setup.fixture.alice.id.rawValue && token.scope == "activity" && token.refreshToken == nil)
        let introspected = try await setup.fixture.server.introspection.introspect(
            TokenRequest(body: FormParameters([("token", token.accessToken)]), authorization: setup.fixture.serviceBasic)
        ).get()
        #expect(introspected.active && introspected.audience == [Self.notes])
        // A plain RFC 7523 assertion, to the token endpoint, without typ or resource, naming the
        // client by azp; without any client named it is refused.
        let plain = try assertion(
            setup, type: nil, ["aud": Fixture.issuer + "/oauth2/token", "azp": setup.agent.id.rawValue],
            remove: ["client_id", "resource", "scope"])
        #expect(try await grant(setup, plain, extra: [("scope", "profile")]).get().scope == "profile")
        let unbound = try assertion(setup, type: nil, remove: ["client_id", "resource", "scope"])
        #expect(await grant(setup, unbound, extra: [("scope", "profile")]).failure?.error.code == .invalidGrant)
        let metadata = try await setup.fixture.server.metadata()
        #expect(metadata.grantTypesSupported.contains(GrantTypes.jwtBearer))
        #expect(metadata.authorizationGrantProfilesSupported == ["urn:ietf:params:oauth:grant-profile:id-jag"])
    }

    @Test("JA1 An assertion is used once: a replay, and all but one of eight at once, are refused")
    func replay() async throws {
        let setup = try await setup()
        let once = try assertion(setup)
        let wins = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { await grant(setup, once).value != nil } }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(wins == 1)
        let again = await grant(setup, once).failure?.error
        #expect(again?.code == .invalidGrant && again?.errorDescription?.contains("used before") == true)
    }

    @Test("JA2 aud: this server's issuer alone for an identity assertion; never another server, never the IdP's client id")
    func audience() async throws {
        let setup = try await setup()
        for aud: Any in [
            "https://other.example", Fixture.issuer + "/oauth2/token", [Fixture.issuer, "https://other.example"],
        ] {
            #expect(await grant(setup, try assertion(setup, ["aud": aud])).failure?.error.code == .invalidGrant)
        }
        // An ID token the provider gave this server at a sign-in is no grant, even with our issuer beside it.
        let idToken = try assertion(setup, type: "JWT", ["aud": [Fixture.issuer, "latchkey-at-corp"]])
        #expect(await grant(setup, idToken).failure?.error.code == .invalidGrant)
        #expect(await grant(setup, try assertion(setup, type: "at+jwt")).failure?.error.code == .invalidGrant)
    }

    @Test("JA3 Expired, too long-lived, future, unsigned by the provider's key, or from an issuer not trusted: refused")
    func signatureAndTime() async throws {
        let setup = try await setup()
        let now = Int(setup.fixture.clock.now.timeIntervalSince1970)
        for claims: [String: Any] in [
            ["exp": now - 120], ["exp": now + 7200], ["nbf": now + 600], ["iss": "https://evil.example"],
        ] {
            #expect(await grant(setup, try assertion(setup, claims)).failure?.error.code == .invalidGrant)
        }
        let forged = try assertion(setup, signer: P256.Signing.PrivateKey())
        #expect(await grant(setup, forged).failure?.error.code == .invalidGrant)
        #expect(await grant(setup, "not.a.jwt").failure?.error.code == .invalidGrant)
        // This server's own issuer is never a trusted provider (draft §9.3).
        #expect(await grant(setup, try assertion(setup, ["iss": Fixture.issuer])).failure?.error.code == .invalidGrant)
        // A provider whose assertions are not accepted, or that is disabled.
        let refusing = try await self.setup(accepts: false)
        #expect(await grant(refusing, try assertion(refusing)).failure?.error.code == .invalidGrant)
        try await setup.fixture.admin.setIdentityProviderEnabled(name: "corp", false)
        #expect(await grant(setup, try assertion(setup)).failure?.error.code == .invalidGrant)
    }

    @Test("JA4 client_id binds the assertion to the authenticated client; only allowed confidential clients use the grant")
    func clientBinding() async throws {
        let setup = try await setup()
        let stolen = try assertion(setup, ["client_id": setup.fixture.web.id.rawValue])
        #expect(await grant(setup, stolen).failure?.error.code == .invalidGrant)
        #expect(await grant(setup, try assertion(setup, remove: ["client_id"])).failure?.error.code == .invalidGrant)
        // The web client of the fixture is not allowed the grant, even with an assertion naming it.
        let forWeb = try assertion(setup, ["client_id": setup.fixture.web.id.rawValue])
        #expect(await grant(setup, forWeb, authorization: setup.fixture.webBasic).failure?.error.code == .unauthorizedClient)
        let publicClient = await setup.fixture.token([
            ("grant_type", GrantTypes.jwtBearer), ("assertion", try assertion(setup)),
            ("client_id", setup.fixture.native.id.rawValue),
        ])
        #expect(publicClient.failure?.error.code == .unauthorizedClient)
        // A key-bound assertion (cnf.jkt) needs a DPoP proof with that key.
        let bound = try assertion(setup, ["cnf": ["jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"]])
        #expect(await grant(setup, bound).failure?.error.code == .invalidGrant)
    }

    @Test("JA5 The resource must be registered and within the assertion's; the scope only narrows")
    func resourceAndScope() async throws {
        let setup = try await setup()
        let unknown = try assertion(setup, ["resource": "https://unknown.example/api"])
        #expect(await grant(setup, unknown).failure?.error.code == .invalidGrant)
        let other = await grant(setup, try assertion(setup), extra: [("resource", "https://other.example/api")])
        #expect(other.failure?.error.code == .invalidTarget)
        let wider = await grant(setup, try assertion(setup), extra: [("scope", "activity profile")])
        #expect(wider.failure?.error.code == .invalidScope)
        let noScope = try assertion(setup, remove: ["scope", "resource"])
        #expect(await grant(setup, noScope).failure?.error.code == .invalidScope)
        // A refused request does not spend the assertion.
        let kept = try assertion(setup)
        #expect(await grant(setup, kept, extra: [("scope", "sleep")]).failure?.error.code == .invalidScope)
        #expect(await grant(setup, kept).value != nil)
    }

    @Test("JA6 The user: the linked account, never a disabled one, never made; a verified address only where trusted")
    func account() async throws {
        let setup = try await setup()
        let fixture = setup.fixture
        #expect(await grant(setup, try assertion(setup, ["sub": "u-stranger"])).failure?.error.code == .invalidGrant)
        try await fixture.admin.setDisabled(username: "alice", true)
        #expect(await grant(setup, try assertion(setup)).failure?.error.code == .invalidGrant)

        let trusting = try await self.setup(linksVerifiedEmail: true)
        let bob = trusting.fixture.bob
        _ = try await trusting.fixture.store.setUserProfile(
            id: bob.id, displayName: nil, email: "bob@corp.example", emailVerified: true, at: trusting.fixture.clock.now)
        let unverified = try assertion(trusting, ["sub": "u-bob", "email": "bob@corp.example"])
        #expect(await grant(trusting, unverified).failure?.error.code == .invalidGrant)
        let verified = try assertion(trusting, ["sub": "u-bob", "email": "bob@corp.example", "email_verified": true])
        #expect(try await grant(trusting, verified).get().userID == bob.id.rawValue)
        #expect(try await trusting.fixture.store.federatedIdentity(provider: "corp", subject: "u-bob")?.userID == bob.id)
        // Where the provider is not trusted with addresses, the same assertion finds no account.
        _ = try await setup.fixture.store.setUserProfile(
            id: fixture.bob.id, displayName: nil, email: "bob@corp.example", emailVerified: true, at: fixture.clock.now)
        let elsewhere = try assertion(setup, ["sub": "u-bob", "email": "bob@corp.example", "email_verified": true])
        #expect(await grant(setup, elsewhere).failure?.error.code == .invalidGrant)
    }

    @Test("JA7 Only an OpenID provider's assertions may be accepted, and an administrator may turn them off")
    func administration() async throws {
        let setup = try await setup()
        try await setup.fixture.admin.setIdentityProviderAcceptsAssertions(name: "corp", false)
        #expect(await grant(setup, try assertion(setup)).failure?.error.code == .invalidGrant)
        var plain = IdentityProviderRegistration(name: "gh", issuer: nil, clientID: "x")
        plain.kind = .oauth2
        plain.authorizationEndpoint = "https://gh.example/authorize"
        plain.tokenEndpoint = "https://gh.example/token"
        plain.userinfoEndpoint = "https://gh.example/user"
        plain.acceptsAssertions = true
        await #expect(throws: AdministrationError.self) {
            try await setup.fixture.admin.addIdentityProvider(plain, keyEncryptionKey: Fixture.keyEncryptionKey)
        }
    }
}
