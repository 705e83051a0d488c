import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@Suite("Implicit grant, client credentials and personal apps")
struct ImplicitAndClientCredentialsTests {
    func implicitRequest(
        _ fixture: Fixture, client: Client? = nil, redirectURI: String = "https://spa.example/cb",
        extra: [(String, String)] = [], session: BrowserSession
    ) async throws -> AuthorizationStep {
        try await fixture.server.authorization.authorize(
            FormParameters(
                [
                    ("response_type", "token"), ("client_id", (client ?? fixture.spa).id.rawValue), ("redirect_uri", redirectURI),
                    ("scope", "profile"), ("state", "st"),
                ] + extra), session: session)
    }

    static func fragment(_ location: String) throws -> FormParameters {
        let parts = location.split(separator: "#", maxSplits: 1)
        guard parts.count == 2 else { throw FixtureError("no fragment in \(location)") }
        return try FormParameters(decoding: String(parts[1]))
    }

    @Test("T54 The implicit grant answers in the fragment with the lifetime the user chose and no refresh token")
    func implicit() async throws {
        let fixture = try await Fixture.make()
        let session = try await fixture.signedInSession()
        guard case .consent(let prompt) = try await implicitRequest(fixture, session: session) else {
            Issue.record("expected consent"); return
        }
        #expect(prompt.lifetimeChoices.map(\.seconds) == [86_400, 604_800, 2_592_000, 31_536_000])
        let step = try await fixture.server.authorization.decide(
            FormParameters([
                ("csrf_token", session.csrfToken), ("request", prompt.pendingID), ("decision", "allow"),
                ("scope", "profile"), ("lifetime", "604800"),
            ]), session: session)
        guard case .redirect(let location) = step else { Issue.record("expected a redirect"); return }
        #expect(location.hasPrefix("https://spa.example/cb#"))
        #expect(!location.contains("?"), "nothing in the query")
        let fragment = try Self.fragment(location)
        #expect(fragment["token_type"] == "Bearer")
        #expect(fragment["expires_in"] == "604800")
        #expect(fragment["scope"] == "profile")
        #expect(fragment["state"] == "st")
        #expect(fragment["user_id"] == fixture.alice.id.rawValue)
        #expect(fragment["iss"] == Fixture.issuer)
        #expect(fragment["refresh_token"] == nil)
        let token = try #require(fragment["access_token"])
        #expect(try await fixture.isAlive(token))
        fixture.clock.advance(by: 604_801)
        #expect(try await !fixture.isAlive(token))
    }

    @Test("A lifetime outside the offered ones falls back to one day; remembered consent gives one day")
    func implicitLifetimeBounds() async throws {
        let fixture = try await Fixture.make()
        let session = try await fixture.signedInSession()
        guard case .consent(let prompt) = try await implicitRequest(fixture, session: session) else { return }
        let step = try await fixture.server.authorization.decide(
            FormParameters([
                ("csrf_token", session.csrfToken), ("request", prompt.pendingID), ("decision", "allow"),
                ("scope", "profile"), ("lifetime", "99999999"),
            ]), session: session)
        guard case .redirect(let location) = step else { Issue.record("expected a redirect"); return }
        #expect(try Self.fragment(location)["expires_in"] == "86400")
        guard case .redirect(let again) = try await implicitRequest(fixture, session: session) else {
            Issue.record("remembered consent should skip the page"); return
        }
        #expect(try Self.fragment(again)["expires_in"] == "86400")
    }

    @Test("T53 T54 Implicit is refused to clients not registered for it, and never answers in the query")
    func implicitRefused() async throws {
        let fixture = try await Fixture.make()
        let session = try await fixture.signedInSession()
        let plainBrowser = try await fixture.admin.registerClient(
            type: .browser, name: "No implicit", redirectURIs: ["https://b.example/cb"], scopes: ["profile"]
        ).client
        for (client, uri) in [(plainBrowser, "https://b.example/cb"), (fixture.web, "https://web.example/cb")] {
            let step = try await implicitRequest(fixture, client: client, redirectURI: uri, session: session)
            guard case .redirect(let location) = step else { Issue.record("expected a redirect"); continue }
            #expect(try Self.fragment(location)["error"] == "unauthorized_client")
            #expect(try Self.fragment(location)["access_token"] == nil)
        }
        let query = try await implicitRequest(fixture, extra: [("response_mode", "query")], session: session)
        guard case .redirect(let location) = query else { Issue.record("expected a redirect"); return }
        #expect(try Self.fragment(location)["error"] == "invalid_request")
        // A browser client's code flow still needs PKCE.
        let noPKCE = try await fixture.server.authorization.authorize(
            FormParameters([
                ("response_type", "code"), ("client_id", fixture.spa.id.rawValue), ("scope", "profile"), ("state", "s"),
            ]),
            session: session)
        guard case .redirect(let refused) = noPKCE else { Issue.record("expected a redirect"); return }
        #expect(Fixture.parameter("error", in: refused) == "invalid_request")
    }

    @Test("T56 A service client gets an access token for its registered scopes, without user or refresh token")
    func clientCredentials() async throws {
        let fixture = try await Fixture.make()
        let all = try await fixture.token([("grant_type", "client_credentials")], authorization: fixture.serviceBasic).get()
        #expect(all.refreshToken == nil)
        #expect(all.userID == nil)
        #expect(all.scope == "activity sleep")
        let some = try await fixture.token(
            [("grant_type", "client_credentials"), ("scope", "sleep")], authorization: fixture.serviceBasic
        ).get()
        #expect(some.scope == "sleep")
        let record = try #require(try await fixture.store.token(presented: some.accessToken))
        #expect(record.userID == nil && record.isActive(at: fixture.clock.now))
        // Grant ids are UUIDv7: version 7, and later grants sort after earlier ones.
        let uuid = try #require(UUID(uuidString: record.grantID.rawValue))
        #expect(uuid.uuidString.lowercased() == record.grantID.rawValue)
        #expect(uuid.uuid.6 >> 4 == 7 && uuid.uuid.8 >> 6 == 2, "version 7, variant 10")
        let milliseconds = UInt64(fixture.clock.now.timeIntervalSince1970 * 1000)
        #expect(UInt64(record.grantID.rawValue.replacingOccurrences(of: "-", with: "").prefix(12), radix: 16) == milliseconds)
        fixture.clock.advance(by: 1)
        let later = try await fixture.token([("grant_type", "client_credentials")], authorization: fixture.serviceBasic).get()
        #expect(
            try #require(try await fixture.store.token(presented: later.accessToken)).grantID.rawValue
                > record.grantID.rawValue)
        let wider = await fixture.token(
            [("grant_type", "client_credentials"), ("scope", "profile")], authorization: fixture.serviceBasic)
        #expect(wider.failure?.error.code == .invalidScope)
        let code = await fixture.token(
            [("grant_type", "authorization_code"), ("code", "x")], authorization: fixture.serviceBasic)
        #expect(code.failure?.error.code == .unauthorizedClient)
        let wrongSecret = await fixture.token(
            [("grant_type", "client_credentials")],
            authorization: "Basic " + Data("\(fixture.service.id):x".utf8).base64EncodedString())
        #expect(wrongSecret.failure?.error.code == .invalidClient)
    }

    @Test("T55 T56b client_credentials is refused to public and web clients")
    func clientCredentialsRefused() async throws {
        let fixture = try await Fixture.make()
        let native = await fixture.token([("grant_type", "client_credentials"), ("client_id", fixture.native.id.rawValue)])
        #expect(native.failure?.error.code == .unauthorizedClient)
        let web = await fixture.token([("grant_type", "client_credentials")], authorization: fixture.webBasic)
        #expect(web.failure?.error.code == .unauthorizedClient)
    }

    @Test("A personal app can be authorized by its owner only")
    func personalApp() async throws {
        let fixture = try await Fixture.make()
        func request(_ session: BrowserSession) async throws -> AuthorizationStep {
            try await fixture.server.authorization.authorize(
                FormParameters([
                    ("response_type", "code"), ("client_id", fixture.personal.id.rawValue), ("scope", "profile"), ("state", "s"),
                    ("code_challenge", Fixture.verifier.s256Challenge), ("code_challenge_method", "S256"),
                ]), session: session)
        }
        guard case .redirect(let refused) = try await request(try await fixture.signedInSession(as: "bob")) else {
            Issue.record("expected a redirect for bob"); return
        }
        #expect(Fixture.parameter("error", in: refused) == "access_denied")
        #expect(Fixture.parameter("code", in: refused) == nil)
        guard case .consent = try await request(try await fixture.signedInSession()) else {
            Issue.record("the owner should see the consent page"); return
        }
    }

    @Test("Rotating a secret stops the old one at once")
    func rotateSecret() async throws {
        let fixture = try await Fixture.make()
        let secret = try await fixture.admin.rotateSecret(clientID: fixture.service.id.rawValue)
        #expect(await fixture.token([("grant_type", "client_credentials")], authorization: fixture.serviceBasic).failure != nil)
        let fresh = "Basic " + Data("\(fixture.service.id):\(secret)".utf8).base64EncodedString()
        #expect(await fixture.token([("grant_type", "client_credentials")], authorization: fresh).value != nil)
        await #expect(throws: AdministrationError.self) {
            try await fixture.admin.rotateSecret(clientID: fixture.native.id.rawValue)
        }
    }
}
