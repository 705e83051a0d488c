import Foundation
import LatchkeyCore
import LatchkeyServer

/// An OpenID Connect relying party registered on a fixture, and the steps of its flow.
public struct RelyingParty: Sendable {
    public init(fixture: Fixture, client: Client) {
        self.fixture = fixture
        self.client = client
    }

    public let fixture: Fixture
    public let client: Client
    public static let redirect = "http://127.0.0.1:5000/callback"
    public static let afterLogout = "https://rp.example/signed-out"

    public static func make(_ fixture: Fixture, algorithm: SigningAlgorithm = .rs256, name: String = "RP") async throws
        -> RelyingParty
    {
        let registered = try await fixture.admin.registerClient(
            type: .native, name: name, redirectURIs: ["http://127.0.0.1/callback"], scopes: ["openid", "profile", "email"],
            idTokenSigningAlgorithm: algorithm, postLogoutRedirectURIs: [afterLogout])
        return RelyingParty(fixture: fixture, client: registered.client)
    }

    public func request(_ extra: [(String, String)], scope: String = "openid profile") -> FormParameters {
        FormParameters(
            [
                ("response_type", "code"), ("client_id", client.id.rawValue), ("scope", scope), ("state", "st"),
                ("redirect_uri", Self.redirect), ("code_challenge", Fixture.verifier.s256Challenge),
                ("code_challenge_method", "S256"),
            ] + extra)
    }

    /// Authorizes (consenting to everything if asked) and returns the step that ends it.
    public func authorize(_ extra: [(String, String)] = [], scope: String = "openid profile", session: BrowserSession)
        async throws
        -> AuthorizationStep
    {
        let step = try await fixture.server.authorization.authorize(request(extra, scope: scope), session: session)
        guard case .consent(let prompt) = step else { return step }
        var form = [("csrf_token", session.csrfToken), ("request", prompt.pendingID), ("decision", "allow")]
        form += prompt.scopes.map { ("scope", $0.name) }
        return try await fixture.server.authorization.decide(FormParameters(form), session: session)
    }

    /// The whole flow: a token response with its ID token.
    public func tokens(_ extra: [(String, String)] = [], scope: String = "openid profile", session: BrowserSession) async throws
        -> TokenResponse
    {
        let step = try await authorize(extra, scope: scope, session: session)
        guard case .redirect(let location) = step, let code = Fixture.parameter("code", in: location) else {
            throw FixtureError("no code: \(step)")
        }
        return try await fixture.exchange(code, client: client, redirectURI: Self.redirect).get()
    }

    /// Verifies an ID token as a relying party would: through the published key set.
    public func verify(_ idToken: String, allowed: Set<String> = ["RS256", "ES256"]) async throws -> Result<
        IDTokenClaims, JWSRejection
    > {
        let keySet = try await fixture.server.signingKeys.publishedKeySet(at: fixture.clock.now)
        return try await PublicKeySet.parse(Data(keySet.utf8)).verify(idToken, as: IDTokenClaims.self, allowed: allowed)
    }
}
