import Foundation
import HTTPTypes
import LatchkeyClient
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A user agent that signs in and consents the way a person in a browser would, then follows the
/// final redirect to the app's loopback receiver. Like a real browser it returns at once.
struct TestUserAgent: UserAgent {
    let port: Int
    let grant: [String]?

    func open(_ url: URL) async throws {
        let path = url.absoluteString.replacingOccurrences(of: "http://127.0.0.1:\(port)", with: "")
        let port = port, grant = grant
        Task {
            let browser = Browser(port: port)
            var page = try await browser.get(path)
            if let login = page.location, login.hasPrefix("/login") {
                let form = try await browser.get(login)
                page = try await browser.post(
                    "/login",
                    form: [
                        ("csrf_token", form.field("csrf_token")!), ("request", form.field("request")!), ("username", "alice"),
                        ("password", Fixture.password),
                    ])
                page = try await browser.get(page.location!)
            }
            if page.status == .ok {
                let offered = page.body.components(separatedBy: "name=\"scope\" value=\"").dropFirst().map {
                    $0.prefix { $0 != "\"" }
                }
                var form = [
                    ("csrf_token", page.field("csrf_token")!), ("request", page.field("request")!), ("decision", "allow"),
                ]
                form += (grant ?? offered.map(String.init)).map { ("scope", $0) }
                page = try await browser.post("/oauth2/authorize", form: form)
            }
            try await browser.close()
            _ = try await URLSession.shared.data(from: URL(string: page.location!)!)
        }
    }
}

@Suite("Client library against the real server")
struct ClientLibraryTests {
    /// A fixture whose issuer is the live server's real address, so discovery works.
    static func start(
        grace: TimeInterval = 60, configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> (Fixture, LiveServer, OAuthClient) {
        let port = try freePort()
        let fixture = try await Fixture.make {
            $0.issuer = "http://127.0.0.1:\(port)"
            $0.refreshGracePeriod = grace
            configure(&$0)
        }
        let live = try await LiveServer.start(fixture.server, port: port)
        let provider = try await ProviderConfiguration.discover(issuer: "http://127.0.0.1:\(port)")
        return (fixture, live, OAuthClient(provider: provider, clientID: fixture.native.id.rawValue))
    }

    @Test("Discovery, the loopback receiver and a browser give a token set with the granted scopes")
    func signIn() async throws {
        let (fixture, live, client) = try await Self.start()
        #expect(client.provider.issParameterSupported)
        let tokens = try await client.signInWithLoopback(
            scope: ["profile", "activity"], userAgent: TestUserAgent(port: live.port, grant: ["profile"]),
            timeout: .seconds(30))
        #expect(tokens.scope == ScopeSet(["profile"]))
        #expect(tokens.userID == fixture.alice.id.rawValue)
        #expect(!tokens.isExpiring(within: 60))
        #expect(try await fixture.isAlive(tokens.accessToken))
        try await live.stop()
    }

    @Test("PAR: the client pushes its request when the server advertises it; the browser sees only client_id and request_uri")
    func pushedSignIn() async throws {
        let (fixture, live, client) = try await Self.start { $0.requirePushedAuthorizationRequests = true }
        #expect(try await fixture.server.metadata().requirePushedAuthorizationRequests == true)
        let port = live.port
        #expect(client.provider.pushedAuthorizationRequestEndpoint?.absoluteString == "http://127.0.0.1:\(port)/oauth2/par")
        let opened = Mutex<URL?>(nil)
        let tokens = try await client.signInWithLoopback(
            scope: ["profile"], userAgent: TestUserAgent(port: live.port, grant: nil), timeout: .seconds(30),
            onAuthorizationURL: { url in opened.withLock { $0 = url } })
        #expect(tokens.scope == ScopeSet(["profile"]))
        let query = try #require(opened.withLock { $0 }.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false) })
        #expect(query.queryItems?.map(\.name).sorted() == ["client_id", "request_uri"])
        // Without the push the same server refuses the request (back at the redirect URI).
        let direct = client.beginAuthorization(scope: ["profile"], redirectURI: "http://127.0.0.1:5000/callback")
        let browser = Browser(port: live.port)
        let page = try await browser.get(
            direct.authorizationURL.absoluteString.replacingOccurrences(of: "http://127.0.0.1:\(port)", with: ""))
        try await browser.close()
        #expect(page.location.flatMap { Fixture.parameter("error", in: $0) } == "invalid_request")
        try await live.stop()
    }

    @Test("With a DPoP key: bound tokens, /userinfo through AuthorizedClient, refresh, and nonces followed")
    func dpopSignIn() async throws {
        let port = try freePort()
        // The real clock: proofs carry this machine's time.
        let fixture = try await Fixture.make {
            $0.issuer = "http://127.0.0.1:\(port)"
            $0.now = { Date() }
            $0.requireDPoPNonce = true
        }
        let live = try await LiveServer.start(fixture.server, port: port)
        let provider = try await ProviderConfiguration.discover(issuer: "http://127.0.0.1:\(port)")
        let key = DPoPKey()
        let client = OAuthClient(provider: provider, clientID: fixture.native.id.rawValue, dpop: key)
        let tokens = try await client.signInWithLoopback(
            scope: ["profile"], userAgent: TestUserAgent(port: live.port, grant: nil), timeout: .seconds(30))
        #expect(tokens.tokenType == "DPoP")
        #expect(try await fixture.store.token(presented: tokens.accessToken)?.keyThumbprint == key.thumbprint)
        let authorized = AuthorizedClient(client: client, store: InMemoryTokenStore(), key: "k", tokens: tokens)
        #expect(try await authorized.userInfo().username == "alice")
        let renewed = try await authorized.accessToken(forceRefresh: true)
        #expect(renewed.tokenType == "DPoP" && renewed.accessToken != tokens.accessToken)
        #expect(try await authorized.userInfo().username == "alice")
        // Without the key the same tokens are refused: a client without it gets nothing from them.
        let thief = AuthorizedClient(
            client: OAuthClient(provider: provider, clientID: fixture.native.id.rawValue), store: InMemoryTokenStore(), key: "k",
            tokens: TokenSet(
                accessToken: renewed.accessToken, tokenType: "Bearer", refreshToken: nil,
                expiresAt: Date().addingTimeInterval(600), scope: renewed.scope, userID: nil))
        await #expect(throws: (any Error).self) { _ = try await thief.userInfo() }
        try await live.stop()
    }

    @Test("With openid: a nonce, an ID token verified through the key set, the identity kept across a refresh")
    func openIDConnect() async throws {
        let port = try freePort()
        // The real clock: the client checks iat and exp against this machine's time.
        let fixture = try await Fixture.make {
            $0.issuer = "http://127.0.0.1:\(port)"
            $0.now = { Date() }
        }
        let live = try await LiveServer.start(fixture.server, port: port)
        let rp = try await fixture.admin.registerClient(
            type: .native, name: "RP", redirectURIs: ["http://127.0.0.1/callback"], scopes: ["openid", "profile"],
            idTokenSigningAlgorithm: .es256)
        let provider = try await ProviderConfiguration.discover(issuer: "http://127.0.0.1:\(port)")
        #expect(provider.jwksURI?.absoluteString == "http://127.0.0.1:\(port)/oauth2/jwks")
        let client = OAuthClient(provider: provider, clientID: rp.client.id.rawValue)
        let tokens = try await client.signInWithLoopback(
            scope: ["openid", "profile"], userAgent: TestUserAgent(port: live.port, grant: nil), timeout: .seconds(30))
        let identity = try #require(tokens.identity)
        #expect(identity.subject == fixture.alice.id.rawValue && identity.issuer == provider.issuer)
        #expect(identity.authTime != nil)
        // A rotation with no lead time: the next ID token names a kid the client has not seen,
        // so it fetches the key set again and finds it.
        _ = try await fixture.server.signingKeys.rotate(leadTime: 0, at: Date())
        let refreshed = try await client.refresh(tokens)
        #expect(refreshed.identity?.subject == identity.subject)
        #expect(JWSHeader(refreshed.idToken!)?.kid != JWSHeader(tokens.idToken!)?.kid)
        try await live.stop()
    }

    @Test("Refresh keeps the rotated refresh token; the old one is then refused with a typed error")
    func refresh() async throws {
        let (fixture, live, client) = try await Self.start(grace: 0)
        let tokens = try await client.signInWithLoopback(
            scope: ["profile"], userAgent: TestUserAgent(port: live.port, grant: nil), timeout: .seconds(30))
        let refreshed = try await client.refresh(tokens)
        #expect(refreshed.refreshToken != tokens.refreshToken)
        #expect(refreshed.userID == tokens.userID)
        #expect(try await fixture.isAlive(refreshed.accessToken))
        do {
            _ = try await client.refresh(tokens)
            Issue.record("a rotated-out refresh token worked")
        } catch let error as ClientError {
            #expect(error.requiresSignIn)
            guard case .server(let oauth) = error else { Issue.record("wrong error"); return }
            #expect(oauth.code == .invalidGrant)
        }
        try await live.stop()
    }

    @Test("Concurrent callers share one refresh: with strict rotation every caller succeeds")
    func concurrentRefresh() async throws {
        let (fixture, live, client) = try await Self.start(grace: 0)
        var tokens = try await client.signInWithLoopback(
            scope: ["profile"], userAgent: TestUserAgent(port: live.port, grant: nil), timeout: .seconds(30))
        tokens.expiresAt = Date().addingTimeInterval(-1)  // due for refresh
        let store = InMemoryTokenStore()
        let authorized = AuthorizedClient(client: client, store: store, key: "k", tokens: tokens)
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 { group.addTask { try await authorized.accessToken().accessToken } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        // Two refreshes with one token would be reuse under strict rotation, and kill the grant.
        #expect(results.count == 1)
        let token = try #require(results.first)
        #expect(token != tokens.accessToken)
        #expect(try await fixture.isAlive(token))
        #expect(await store.load(key: "k")?.accessToken == token)
        try await live.stop()
    }

    @Test("An authorized request refreshes once on a 401 and succeeds")
    func retryOn401() async throws {
        let (_, live, client) = try await Self.start()
        var tokens = try await client.signInWithLoopback(
            scope: ["profile"], userAgent: TestUserAgent(port: live.port, grant: nil), timeout: .seconds(30))
        tokens.accessToken = "lk_at_not-a-real-token"
        let authorized = AuthorizedClient(client: client, store: InMemoryTokenStore(), key: "k", tokens: tokens)
        let (data, response) = try await authorized.send(URLRequest(url: client.provider.userinfoEndpoint!))
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self).contains("\"alice\""))
        try await live.stop()
    }

    @Test("A revoked refresh token surfaces as ClientError.server(invalid_grant)")
    func revoked() async throws {
        let (fixture, live, client) = try await Self.start()
        let tokens = try await client.signInWithLoopback(
            scope: ["profile"], userAgent: TestUserAgent(port: live.port, grant: nil), timeout: .seconds(30))
        let record = try #require(try await fixture.store.token(presented: tokens.refreshToken!))
        try await fixture.store.revokeGrant(id: record.grantID, at: fixture.clock.now)
        let authorized = AuthorizedClient(client: client, store: InMemoryTokenStore(), key: "k", tokens: tokens)
        await #expect(throws: ClientError.self) { try await authorized.accessToken(forceRefresh: true) }
        try await live.stop()
    }
}
