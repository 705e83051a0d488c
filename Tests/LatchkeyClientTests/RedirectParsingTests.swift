import Foundation
import LatchkeyClient
import LatchkeyCore
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Client: authorization request and redirect parsing")
struct RedirectParsingTests {
    let provider = ProviderConfiguration(
        issuer: "https://auth.example.com", authorizationEndpoint: URL(string: "https://auth.example.com/oauth2/authorize")!,
        tokenEndpoint: URL(string: "https://auth.example.com/oauth2/token")!, issParameterSupported: true)

    func session() -> AuthorizationSession {
        OAuthClient(provider: provider, clientID: "notes").beginAuthorization(
            scope: ["profile", "activity"], redirectURI: "com.example.notes:/cb")
    }

    @Test("The authorization URL carries the PKCE S256 challenge of a fresh verifier, state and scope")
    func authorizationURL() throws {
        let session = session()
        let query = try FormParameters(decoding: try #require(session.authorizationURL.query))
        #expect(query["response_type"] == "code")
        #expect(query["client_id"] == "notes")
        #expect(query["redirect_uri"] == "com.example.notes:/cb")
        #expect(query["scope"] == "profile activity")
        #expect(query["code_challenge_method"] == "S256")
        #expect(query["code_challenge"] == session.codeVerifier.s256Challenge)
        #expect(query["state"] == session.state)
        #expect(session.state.count >= 43)
        #expect(self.session().state != session.state)
        #expect(self.session().codeVerifier != session.codeVerifier)
    }

    @Test("A good redirect gives the code; Fitbit's #_=_ and unknown parameters are ignored")
    func goodRedirect() throws {
        let session = session()
        let base = "com.example.notes:/cb?code=abc&state=\(session.state)&iss=https%3A%2F%2Fauth.example.com"
        #expect(try session.code(fromRedirect: base) == "abc")
        #expect(try session.code(fromRedirect: base + "#_=_") == "abc")
        #expect(try session.code(fromRedirect: base + "&extra=1&x=") == "abc")
    }

    @Test("T29 Missing or wrong state, wrong or missing iss are refused before the code is used")
    func refusals() {
        let session = session()
        let iss = "iss=https%3A%2F%2Fauth.example.com"
        #expect(throws: ClientError.self) { try session.code(fromRedirect: "com.example.notes:/cb?code=abc&\(iss)") }
        #expect(throws: ClientError.self) { try session.code(fromRedirect: "com.example.notes:/cb?code=abc&state=nope&\(iss)") }
        #expect(throws: ClientError.self) {
            try session.code(fromRedirect: "com.example.notes:/cb?code=abc&state=\(session.state)&iss=https%3A%2F%2Fevil.example")
        }
        #expect(throws: ClientError.self) {
            try session.code(fromRedirect: "com.example.notes:/cb?code=abc&state=\(session.state)")
        }
        #expect(throws: ClientError.self) {
            try session.code(fromRedirect: "com.example.notes:/cb?state=\(session.state)&\(iss)")
        }
        // A response meant for one flow does not fit another (state is per flow).
        #expect(throws: ClientError.self) {
            try self.session().code(fromRedirect: "com.example.notes:/cb?code=abc&state=\(session.state)&\(iss)")
        }
    }

    @Test("An error redirect becomes a typed server error")
    func errorRedirect() {
        let session = session()
        do {
            _ = try session.code(
                fromRedirect:
                    "com.example.notes:/cb?error=access_denied&error_description=No+thanks&state=\(session.state)&iss=https%3A%2F%2Fauth.example.com"
            )
            Issue.record("expected an error")
        } catch {
            guard case .server(let oauth) = error else { Issue.record("wrong error \(error)"); return }
            #expect(oauth.code == .accessDenied)
            #expect(oauth.errorDescription == "No thanks")
        }
    }

    @Test("Without an issuer (Fitbit) iss is not required")
    func fitbit() throws {
        let session = OAuthClient(provider: .fitbit, clientID: "ABC123").beginAuthorization(
            scope: ["activity", "sleep"], redirectURI: "https://myapp.com/callback")
        #expect(session.authorizationURL.absoluteString.hasPrefix("https://www.fitbit.com/oauth2/authorize?"))
        #expect(
            try session.code(fromRedirect: "https://myapp.com/callback?code=d62d6f5bdc13df79d9a5f&state=\(session.state)#_=_")
                == "d62d6f5bdc13df79d9a5f")
    }

    @Test("The file store writes one 0600 JSON file atomically and reads it back")
    func fileStore() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("lk-\(UUID().uuidString)/credentials.json")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = FileTokenStore(url: url)
        let tokens = TokenSet(
            accessToken: "a", refreshToken: "r", expiresAt: Date(timeIntervalSince1970: 2_000_000_000),
            scope: ScopeSet(["profile"]), userID: "u")
        try await store.save(tokens, key: "k")
        #expect(try await store.load(key: "k") == tokens)
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        try await store.remove(key: "k")
        #expect(try await store.load(key: "k") == nil)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
        #expect(leftovers == ["credentials.json"])
    }
}

@Suite("Client: loopback redirect receiver")
struct LoopbackReceiverTests {
    @Test("Binds 127.0.0.1 on an ephemeral port, ignores other paths, answers the browser, returns the redirect")
    func receives() async throws {
        let receiver = try LoopbackRedirectReceiver(path: "/callback")
        #expect(receiver.port > 0)
        #expect(receiver.redirectURI == "http://127.0.0.1:\(receiver.port)/callback")
        let waiting = Task { try await receiver.waitForRedirect(timeout: .seconds(20)) }
        let other = try await get("http://127.0.0.1:\(receiver.port)/favicon.ico")
        #expect(other.status == 404)
        let page = try await get("http://127.0.0.1:\(receiver.port)/callback?code=x&state=y")
        #expect(page.status == 200)
        #expect(page.body.contains("close this window"))
        #expect(try await waiting.value == "http://127.0.0.1:\(receiver.port)/callback?code=x&state=y")
    }

    @Test("Times out with a clear error")
    func timeout() async throws {
        let receiver = try LoopbackRedirectReceiver()
        await #expect(throws: ClientError.self) { try await receiver.waitForRedirect(timeout: .milliseconds(300)) }
    }

    func get(_ url: String) async throws -> (status: Int, body: String) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}
