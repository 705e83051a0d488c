import Foundation
import JWTKit
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Token exchange (RFC 8693): who may exchange what, narrowing, `act` chains, and the refusals of
/// §2.2.2 (docs/threat-model.md TX1–TX6).
@Suite("Token exchange")
struct TokenExchangeTests {
    static let notes = "https://notes.example/api"
    static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
    static let idTokenType = "urn:ietf:params:oauth:token-type:id_token"

    /// A fixture with a notes resource (JWT tokens) and a resource server allowed to exchange.
    struct Setup {
        var fixture: Fixture
        var exchanger: Client
        var exchangerBasic: String
    }

    func setup(allowed: Bool = true) async throws -> Setup {
        let fixture = try await Fixture.make()
        _ = try await fixture.admin.addResource(
            ResourceRegistration(uri: Self.notes, name: "Notes API", scopes: ["activity"], tokenFormat: .jwt))
        let registered = try await fixture.admin.registerClient(
            ClientSettings(
                type: .service, name: "Gateway", scopes: ["activity", "profile", "sleep"], allowTokenExchange: allowed))
        let basic = "Basic " + Data("\(registered.client.id):\(registered.secret ?? "")".utf8).base64EncodedString()
        return Setup(fixture: fixture, exchanger: registered.client, exchangerBasic: basic)
    }

    /// alice's access token for the native app, for `scope`.
    func userToken(_ fixture: Fixture, scope: String = "profile activity") async throws -> TokenResponse {
        try await fixture.exchange(try await fixture.code(scope: scope)).get()
    }

    func exchange(
        _ setup: Setup, subject: String, type: String = accessTokenType, extra: [(String, String)] = [],
        authorization: String? = nil
    ) async -> Result<TokenResponse, TokenEndpointError> {
        await setup.fixture.token(
            [
                ("grant_type", GrantTypes.tokenExchange), ("subject_token", subject), ("subject_token_type", type),
            ] + extra, authorization: authorization ?? setup.exchangerBasic)
    }

    func introspect(_ fixture: Fixture, _ token: String) async throws -> IntrospectionResponse {
        try await fixture.server.introspection.introspect(
            TokenRequest(body: FormParameters([("token", token)]), authorization: fixture.serviceBasic)
        ).get()
    }

    @Test("A resource server exchanges a user's token for one to another resource: same user, narrower, no refresh")
    func exchanged() async throws {
        let setup = try await setup()
        let fixture = setup.fixture
        let subject = try await userToken(fixture)
        let result = try await exchange(setup, subject: subject.accessToken, extra: [("resource", Self.notes)]).get()
        #expect(result.issuedTokenType == Self.accessTokenType)
        #expect(result.refreshToken == nil && Set(result.scope.split(separator: " ")) == ["profile", "activity"])
        #expect(result.userID == subject.userID)
        let claims = try await fixture.server.signingKeys.verify(
            result.accessToken, as: AccessTokenPayload.self, at: fixture.clock.now)
        #expect(claims?.sub == subject.userID && claims?.clientID == setup.exchanger.id.rawValue)
        #expect(claims?.act == nil, "no actor token: impersonation, no act")
        // `audience` names the same registered resource; a scope the subject holds may be asked for.
        let byAudience = await exchange(
            setup, subject: subject.accessToken, extra: [("audience", Self.notes), ("scope", "activity")])
        #expect(byAudience.value?.scope == "activity")
        // The exchanged token dies with the time of the subject token, never later.
        #expect(result.expiresIn <= subject.expiresIn)
    }

    @Test("TX1 Only a client allowed to exchange, confidential, that could introspect the subject token")
    func whoMayExchange() async throws {
        let setup = try await setup(allowed: false)
        let subject = try await userToken(setup.fixture)
        let refused = await exchange(setup, subject: subject.accessToken)
        #expect(refused.failure?.error.code == .unauthorizedClient)
        // A public client may not exchange, whatever its list says.
        let native = await setup.fixture.token([
            ("grant_type", GrantTypes.tokenExchange), ("subject_token", subject.accessToken),
            ("subject_token_type", Self.accessTokenType), ("client_id", setup.fixture.native.id.rawValue),
        ])
        #expect(native.failure?.error.code == .unauthorizedClient)
        // A web client a user owns cannot reach another client's tokens (the introspection rule).
        let allowed = try await self.setup()
        let personal = try await allowed.fixture.admin.registerClient(
            ClientSettings(
                type: .web, name: "Mine", redirectURIs: ["https://mine.example/cb"], scopes: ["activity"], ownerUsername: "alice",
                allowTokenExchange: true))
        let personalBasic = "Basic " + Data("\(personal.client.id):\(personal.secret ?? "")".utf8).base64EncodedString()
        let other = try await userToken(allowed.fixture)
        let stranger = await exchange(allowed, subject: other.accessToken, authorization: personalBasic)
        #expect(stranger.failure?.error.code == .invalidRequest)
    }

    @Test("TX2 A revoked, expired, refresh, made-up or wrongly typed subject token is invalid_request")
    func badSubjects() async throws {
        let setup = try await setup()
        let fixture = setup.fixture
        let subject = try await userToken(fixture)
        #expect(await exchange(setup, subject: "lk_at_made_up").failure?.error.code == .invalidRequest)
        #expect(await exchange(setup, subject: subject.refreshToken ?? "").failure?.error.code == .invalidRequest)
        let asRefresh = await exchange(
            setup, subject: subject.refreshToken ?? "", type: "urn:ietf:params:oauth:token-type:refresh_token")
        #expect(asRefresh.failure?.error.code == .invalidRequest)
        let wantsRefresh = await exchange(
            setup, subject: subject.accessToken,
            extra: [("requested_token_type", "urn:ietf:params:oauth:token-type:refresh_token")])
        #expect(wantsRefresh.failure?.error.code == .invalidRequest)
        // An access token passed off as an ID token.
        #expect(
            await exchange(setup, subject: subject.accessToken, type: Self.idTokenType).failure?.error.code == .invalidRequest)
        _ = await fixture.server.revocation.revoke(
            TokenRequest(
                body: FormParameters([("token", subject.accessToken), ("client_id", fixture.native.id.rawValue)]),
                authorization: nil))
        #expect(await exchange(setup, subject: subject.accessToken).failure?.error.code == .invalidRequest)
        let later = try await userToken(fixture)
        fixture.clock.advance(by: TimeInterval(later.expiresIn + 1))
        #expect(await exchange(setup, subject: later.accessToken).failure?.error.code == .invalidRequest)
    }

    @Test("TX3 The scope only narrows; an unknown resource or audience is invalid_target")
    func narrowing() async throws {
        let setup = try await setup()
        let subject = try await userToken(setup.fixture, scope: "profile")
        let wider = await exchange(setup, subject: subject.accessToken, extra: [("scope", "profile sleep")])
        #expect(wider.failure?.error.code == .invalidScope)
        let target = await exchange(setup, subject: subject.accessToken, extra: [("audience", "https://elsewhere.example/api")])
        #expect(target.failure?.error.code == .invalidTarget)
        // notes accepts activity, which this subject token does not hold.
        let none = await exchange(setup, subject: subject.accessToken, extra: [("resource", Self.notes)])
        #expect(none.failure != nil)
    }

    /// Another client an administrator registered, allowed to exchange, and its Basic credentials.
    func secondExchanger(_ fixture: Fixture) async throws -> (Client, String) {
        let registered = try await fixture.admin.registerClient(
            ClientSettings(type: .service, name: "Gateway 2", scopes: ["activity", "profile"], allowTokenExchange: true))
        return (
            registered.client, "Basic " + Data("\(registered.client.id):\(registered.secret ?? "")".utf8).base64EncodedString()
        )
    }

    @Test("TX4 With its own token as the actor the new token names it in act, above the chain the subject carried")
    func delegation() async throws {
        let setup = try await setup()
        let fixture = setup.fixture
        let subject = try await userToken(fixture)
        let own = try await fixture.token([("grant_type", "client_credentials")], authorization: setup.exchangerBasic).get()
        let first = try await exchange(
            setup, subject: subject.accessToken,
            extra: [("actor_token", own.accessToken), ("actor_token_type", Self.accessTokenType)]
        ).get()
        let gateway = setup.exchanger.id.rawValue
        let firstAct = #"{"sub":"\#(gateway)","client_id":"\#(gateway)"}"#
        #expect(try await introspect(fixture, first.accessToken).actor == firstAct)
        // A second gateway exchanges the exchanged token, with its own token as the actor: two hops.
        let (second, secondBasic) = try await secondExchanger(fixture)
        let secondOwn = try await fixture.token([("grant_type", "client_credentials")], authorization: secondBasic).get()
        let hop = try await exchange(
            setup, subject: first.accessToken,
            extra: [("actor_token", secondOwn.accessToken), ("actor_token_type", Self.accessTokenType)],
            authorization: secondBasic
        ).get()
        let secondID = second.id.rawValue
        #expect(
            try await introspect(fixture, hop.accessToken).actor
                == #"{"sub":"\#(secondID)","client_id":"\#(secondID)","act":\#(firstAct)}"#)
        // Without an actor the chain the subject carries stays.
        let third = try await exchange(setup, subject: hop.accessToken, extra: [("resource", Self.notes)]).get()
        let claims = try await fixture.server.signingKeys.verify(
            third.accessToken, as: AccessTokenPayload.self, at: fixture.clock.now)
        #expect(claims?.act?.sub == secondID && claims?.act?.act?.sub == gateway)
        // actor_token_type without a token, or a token without its type.
        #expect(
            await exchange(setup, subject: subject.accessToken, extra: [("actor_token_type", Self.accessTokenType)]).failure?
                .error.code == .invalidRequest)
        #expect(
            await exchange(setup, subject: subject.accessToken, extra: [("actor_token", own.accessToken)]).failure?
                .error.code == .invalidRequest)
    }

    @Test("TX4b Another client's token, or another user's, cannot be presented as the actor")
    func forgedActor() async throws {
        let setup = try await setup()
        let fixture = setup.fixture
        let subject = try await userToken(fixture)
        let others = try await fixture.token([("grant_type", "client_credentials")], authorization: fixture.serviceBasic).get()
        let someoneElse = try await userToken(fixture)
        for actor in [others.accessToken, someoneElse.accessToken] {
            let forged = await exchange(
                setup, subject: subject.accessToken, extra: [("actor_token", actor), ("actor_token_type", Self.accessTokenType)])
            #expect(forged.failure?.error.code == .invalidRequest)
        }
    }

    @Test("TX3b Without resource or audience the new token is for the subject's resources; a DPoP-bound subject needs its key")
    func audienceAndBinding() async throws {
        let setup = try await setup()
        let fixture = setup.fixture
        let code = try await fixture.code(scope: "activity", resource: Self.notes)
        let forNotes = try await fixture.token([
            ("grant_type", "authorization_code"), ("code", code), ("client_id", fixture.native.id.rawValue),
            ("redirect_uri", "http://127.0.0.1:5000/callback"), ("code_verifier", Fixture.verifier.value),
            ("resource", Self.notes),
        ]).get()
        let exchanged = try await exchange(setup, subject: forNotes.accessToken).get()
        let claims = try await fixture.server.signingKeys.verify(
            exchanged.accessToken, as: AccessTokenPayload.self, at: fixture.clock.now)
        #expect(claims != nil, "a JWT for notes, as the subject was: its audience kept")
        // A token bound to a DPoP key, with no proof of that key.
        let grant = GrantRecord(
            id: "g-bound", clientID: fixture.native.id, userID: fixture.alice.id, scope: ScopeSet(["activity"]),
            createdAt: fixture.clock.now)
        let split = SplitToken.generate(.accessToken, issuedAt: fixture.clock.now)
        let bound = TokenRecord(
            hash: TokenHash(issued: split), kind: .access, grantID: grant.id, clientID: fixture.native.id,
            userID: fixture.alice.id, scope: ScopeSet(["activity"]), createdAt: fixture.clock.now,
            expiresAt: fixture.clock.now.addingTimeInterval(600), keyThumbprint: String(repeating: "k", count: 43),
            verifierDigest: split.verifierDigest)
        try await fixture.store.insertGrant(grant, tokens: [bound])
        let unproven = await exchange(setup, subject: split.value)
        #expect(unproven.failure?.error.code == .invalidRequest)
        #expect(unproven.failure?.error.errorDescription?.contains("DPoP") == true)
    }

    @Test("TX5 An ID token is exchanged only by its own client, for no more than the user consented to it")
    func idTokens() async throws {
        let fixture = try await Fixture.make()
        let web = try await fixture.admin.registerClient(
            ClientSettings(
                type: .web, name: "Portal", redirectURIs: ["https://web.example/cb"], scopes: ["openid", "profile", "activity"],
                allowTokenExchange: true))
        let basic = "Basic " + Data("\(web.client.id):\(web.secret ?? "")".utf8).base64EncodedString()
        let code = try await fixture.code(client: web.client, scope: "openid profile", redirectURI: "https://web.example/cb")
        let tokens = try await fixture.token(
            [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", "https://web.example/cb"),
                ("code_verifier", Fixture.verifier.value),
            ], authorization: basic
        ).get()
        let idToken = try #require(tokens.idToken)
        let setup = Setup(fixture: fixture, exchanger: web.client, exchangerBasic: basic)
        let exchanged = try await exchange(setup, subject: idToken, type: Self.idTokenType).get()
        #expect(exchanged.userID == fixture.alice.id.rawValue)
        #expect(ScopeSet(parsing: exchanged.scope).map { $0.contains("activity") } == false, "never past the consent")
        // Another client may not exchange it.
        let other = try await fixture.admin.registerClient(
            ClientSettings(type: .service, name: "Other", scopes: ["profile"], allowTokenExchange: true))
        let otherBasic = "Basic " + Data("\(other.client.id):\(other.secret ?? "")".utf8).base64EncodedString()
        let stolen = await exchange(setup, subject: idToken, type: Self.idTokenType, authorization: otherBasic)
        #expect(stolen.failure?.error.code == .invalidRequest)
    }
}

/// The claims of a JWT access token these tests read, `act` included.
struct AccessTokenPayload: JWTPayload {
    struct Actor: Codable, Sendable {
        var sub: String
        var clientID: String?
        var act: Box?
        enum CodingKeys: String, CodingKey {
            case sub, act
            case clientID = "client_id"
        }
    }
    /// An indirection, since a struct cannot hold itself.
    final class Box: Codable, Sendable {
        let sub: String
        let act: Box?
    }
    var sub: String
    var clientID: String
    var act: Actor?
    enum CodingKeys: String, CodingKey {
        case sub, act
        case clientID = "client_id"
    }
    func verify(using algorithm: some JWTAlgorithm) throws {}
}
