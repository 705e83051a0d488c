import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("Client authentication at the token endpoint")
struct ClientAuthenticationTests {
    func webCode(_ fixture: Fixture) async throws -> String {
        try await fixture.code(client: fixture.web, scope: "profile", redirectURI: "https://web.example/cb")
    }

    func exchangeParameters(_ code: String) -> [(String, String)] {
        [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", "https://web.example/cb"),
            ("code_verifier", Fixture.verifier.value),
        ]
    }

    func basic(_ id: String, _ secret: String) -> String {
        "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString()
    }

    @Test("A web client authenticates with HTTP Basic or client_secret_post")
    func confidential() async throws {
        let fixture = try await Fixture.make()
        #expect(await fixture.token(exchangeParameters(try await webCode(fixture)), authorization: fixture.webBasic).value != nil)
        let post =
            exchangeParameters(try await webCode(fixture)) + [
                ("client_id", fixture.web.id.rawValue), ("client_secret", fixture.webSecret),
            ]
        #expect(await fixture.token(post).value != nil)
    }

    @Test("T37 A wrong secret and an unknown client are the same 401 invalid_client, with the Basic challenge")
    func wrongSecret() async throws {
        let fixture = try await Fixture.make()
        let code = try await webCode(fixture)
        for header in [basic(fixture.web.id.rawValue, "wrong"), basic("nope", "x"), basic(fixture.native.id.rawValue, "x")] {
            let failure = await fixture.token(exchangeParameters(code), authorization: header).failure
            #expect(failure?.error == OAuthError.invalidClient("Client authentication failed."))
            #expect(failure?.usedBasicAuthentication == true)
        }
        let post = await fixture.token(
            exchangeParameters(code) + [("client_id", fixture.web.id.rawValue), ("client_secret", "wrong")])
        #expect(post.failure?.error.code == .invalidClient)
        #expect(post.failure?.usedBasicAuthentication == false)
        #expect(await fixture.token(exchangeParameters(code), authorization: fixture.webBasic).value != nil, "the code survived")
    }

    @Test("T38 Two authentication methods at once are refused")
    func twoMethods() async throws {
        let fixture = try await Fixture.make()
        let code = try await webCode(fixture)
        let both = await fixture.token(
            exchangeParameters(code) + [("client_secret", fixture.webSecret)], authorization: fixture.webBasic)
        #expect(both.failure?.error.code == .invalidRequest)
    }

    @Test("T13c Basic as one client with another client_id in the body is refused")
    func mismatchedID() async throws {
        let fixture = try await Fixture.make()
        let code = try await webCode(fixture)
        let result = await fixture.token(
            exchangeParameters(code) + [("client_id", fixture.native.id.rawValue)], authorization: fixture.webBasic)
        #expect(result.failure?.error.code == .invalidRequest)
    }

    @Test("T39 A confidential client must authenticate; a public client must not send a secret")
    func methodMatchesRegistration() async throws {
        let fixture = try await Fixture.make()
        let code = try await webCode(fixture)
        let noSecret = await fixture.token(exchangeParameters(code) + [("client_id", fixture.web.id.rawValue)])
        #expect(noSecret.failure?.error.code == .invalidClient)
        let nativeCode = try await fixture.code()
        let withSecret = await fixture.exchange(nativeCode).map { $0 }  // control
        #expect(withSecret.value != nil)
        let nativeCode2 = try await fixture.code()
        let secretForPublic = await fixture.token([
            ("grant_type", "authorization_code"), ("code", nativeCode2), ("client_id", fixture.native.id.rawValue),
            ("client_secret", "x"), ("redirect_uri", "http://127.0.0.1:5000/callback"),
            ("code_verifier", Fixture.verifier.value),
        ])
        #expect(secretForPublic.failure?.error.code == .invalidClient)
        let basicForPublic = await fixture.token(
            [
                ("grant_type", "authorization_code"), ("code", nativeCode2), ("redirect_uri", "http://127.0.0.1:5000/callback"),
                ("code_verifier", Fixture.verifier.value),
            ], authorization: basic(fixture.native.id.rawValue, ""))
        #expect(basicForPublic.failure?.error.code == .invalidClient)
    }

    @Test("T40 Malformed Basic credentials are invalid_client, never a crash; the scheme is case-insensitive")
    func malformedBasic() async throws {
        let fixture = try await Fixture.make()
        let code = try await webCode(fixture)
        for header in ["Basic", "Basic !!!notbase64", "Basic " + Data("web".utf8).base64EncodedString(), "Bearer abc"] {
            #expect(await fixture.token(exchangeParameters(code), authorization: header).failure?.error.code == .invalidClient)
        }
        let lower = "basic " + Data("\(fixture.web.id):\(fixture.webSecret)".utf8).base64EncodedString()
        #expect(await fixture.token(exchangeParameters(code), authorization: lower).value != nil)
    }

    @Test("No client identification at all is invalid_client")
    func anonymous() async throws {
        let fixture = try await Fixture.make()
        #expect(await fixture.token([("grant_type", "authorization_code"), ("code", "x")]).failure?.error.code == .invalidClient)
    }
}

@Suite("Bearer validation at /userinfo")
struct UserInfoTests {
    @Test("T52 Missing, garbage, expired and wrongly scoped tokens are refused as RFC 6750 says")
    func bearer() async throws {
        let fixture = try await Fixture.make()
        let response = try await fixture.exchange(try await fixture.code()).get()
        let info = try await fixture.server.userInfo.claims(authorization: "bearer \(response.accessToken)").get()
        #expect(info.username == "alice" && info.userID == fixture.alice.id.rawValue && info.name == "Alice Liddell")
        #expect(try await fixture.server.userInfo.claims(authorization: nil).failure == .missing)
        #expect(try await fixture.server.userInfo.claims(authorization: "Bearer garbage").failure == .invalidToken)
        #expect(
            try await fixture.server.userInfo.claims(authorization: "Bearer \(response.refreshToken!)").failure == .invalidToken)

        let noProfile = try await fixture.exchange(try await fixture.code(scope: "activity")).get()
        #expect(
            try await fixture.server.userInfo.claims(authorization: "Bearer \(noProfile.accessToken)").failure
                == .insufficientScope("openid"))

        fixture.clock.advance(by: 28_800)
        #expect(
            try await fixture.server.userInfo.claims(authorization: "Bearer \(response.accessToken)").failure == .invalidToken)
    }

    @Test("The hand-written userinfo JSON decodes to the same claims, with or without a name, whatever the characters")
    func jsonBody() throws {
        for info in [
            UserInfo(sub: "u1", userID: "u1", username: "alice", name: "Alice \"Al\" <Liddell>\n\\ é"),
            UserInfo(sub: "u2", userID: "u2", username: "bob\u{1}", name: nil),
            UserInfo(
                sub: "u3", name: "C", preferredUsername: "c", updatedAt: 1_700_000_000, email: "c@example.com",
                emailVerified: false),
        ] {
            #expect(try JSONDecoder().decode(UserInfo.self, from: Data(info.jsonBody.utf8)) == info)
        }
        #expect(
            UserInfo(sub: "s", userID: "s", username: "u", name: nil).jsonBody == #"{"sub":"s","user_id":"s","username":"u"}"#)
    }
}

@Suite("Administration")
struct AdministrationTests {
    @Test("Registration refuses bad redirect URIs, unknown scopes and non-https links, with a sentence")
    func refusals() async throws {
        let fixture = try await Fixture.make()
        let cases: [(ClientType, [String], [String], String?)] = [
            (.native, ["javascript:alert(1)"], [], nil), (.native, ["myapp:/cb"], [], nil),
            (.web, ["http://example.com/cb"], [], nil),
            (.native, [], [], nil), (.native, ["com.example.app:/cb"], ["frobnicate"], nil),
            (.native, ["com.example.app:/cb"], [], "http://logo.example/x.png"), (.service, ["https://svc.example/cb"], [], nil),
            (.browser, [], [], nil),
        ]
        for (type, uris, scopes, logo) in cases {
            await #expect(throws: AdministrationError.self) {
                try await fixture.admin.registerClient(type: type, name: "X", redirectURIs: uris, scopes: scopes, logoURI: logo)
            }
        }
    }

    @Test("A web client gets a secret once, stored only as its hash; a native one gets none")
    func secrets() async throws {
        let fixture = try await Fixture.make()
        let stored = try #require(try await fixture.store.client(id: fixture.web.id))
        #expect(stored.secretHash == RandomToken.hash(fixture.webSecret))
        #expect(try await fixture.store.client(id: fixture.native.id)?.secretHash == nil)
    }

    @Test("Users: duplicate names and short passwords are refused; a new password ends sessions")
    func users() async throws {
        let fixture = try await Fixture.make()
        await #expect(throws: AdministrationError.self) {
            try await fixture.admin.createUser(username: "alice", displayName: nil, password: "long-enough-1")
        }
        await #expect(throws: AdministrationError.self) {
            try await fixture.admin.createUser(username: "bob", displayName: nil, password: "short")
        }
        let session = try await fixture.signedInSession()
        try await fixture.admin.setPassword(username: "alice", password: "a-new-password")
        #expect(try await fixture.store.session(idHash: session.idHash) == nil)
    }

    @Test("The default catalogue has profile and the data scopes; a scope in use cannot be deleted")
    func catalogue() async throws {
        let fixture = try await Fixture.make()
        let names = try await fixture.store.scopeCatalogue().map(\.name)
        for name in ["profile", "activity", "heartrate", "sleep", "weight"] { #expect(names.contains(name)) }
        await #expect(throws: AdministrationError.self) { try await fixture.admin.deleteScope(name: "profile") }
        try await fixture.admin.addScope(name: "notes.read", description: "Read your notes")
        try await fixture.admin.deleteScope(name: "notes.read")
        await #expect(throws: AdministrationError.self) { try await fixture.admin.addScope(name: "bad scope", description: "x") }
    }
}
