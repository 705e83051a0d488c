import Foundation
import LatchkeyCore
import LatchkeyPasswords
import LatchkeyServer
import LatchkeyStoreSQLite
import Synchronization

/// A clock tests move by hand, so expiry is tested without sleeping (docs/threat-model.md §0).
public final class TestClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    public init() {}
    public var now: Date { current.withLock { $0 } }
    public func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// A real server over a real SQLite file in a fresh temporary folder, with the clients and the user
/// the tests share: a native app, a second native app, a web app and alice.
public struct Fixture: Sendable {
    /// Password hashing for every fixture: the suites run many tests at once, each creating users,
    /// so the queue is unbounded here (production's bound is tested on its own).
    public static let passwordWorkers = PasswordWorkers(threads: 2, queueLimit: .max / 2)
    public static let issuer = "http://latchkey.test"
    public static let password = "correct-horse"
    /// One key-encryption key for every fixture of the test run (a reopened store must open its keys).
    public static let keyEncryptionKey = KeyEncryptionKey.generate().key

    /// A keyring over `store`, as `latchkey serve` makes one.
    public static func signingKeys(_ store: any Store, _ configuration: ServerConfiguration) -> SigningKeyring {
        SigningKeyring(store: store, keyEncryptionKey: keyEncryptionKey, signedTokenLifetime: configuration.idTokenLifetime)
    }

    public let directory: URL
    public let store: SQLiteStore
    public let server: AuthorizationServer
    public let admin: Administration
    public let clock: TestClock
    public let native: Client
    public let native2: Client
    public let web: Client
    public let webSecret: String
    public let alice: User
    /// A browser app registered for the implicit grant.
    public let spa: Client
    /// A service client (client credentials) and its secret: also the resource server that introspects.
    public let service: Client
    public let serviceSecret: String
    /// A personal app owned by alice.
    public let personal: Client
    /// A second user.
    public let bob: User

    /// - Parameter sendsMail: give the server an outbox (``Fixture/keyEncryptionKey``), as
    ///   `serve --smtp-url` does; read what it queued with ``mail()``.
    public static func make(
        directory: URL? = nil, sendsMail: Bool = false, assertionIssuerKeys: (any AssertionIssuerKeys)? = nil,
        backChannelNotifier: (any BackChannelNotifying)? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> Fixture {
        let directory =
            directory
            ?? Scratch.path("fixture")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try SQLiteStore(path: directory.appendingPathComponent("latchkey.sqlite").path)
        let clock = TestClock()
        var configuration = ServerConfiguration(issuer: issuer)
        configuration.now = { clock.now }
        configure(&configuration)
        let hasher = BcryptPasswordHasher(cost: 4, workers: Fixture.passwordWorkers)
        let outbox = MailOutbox(
            store: store, keyEncryptionKey: keyEncryptionKey, messageIDDomain: "latchkey.test", now: { clock.now })
        let server = AuthorizationServer(
            store: store, configuration: configuration, passwordHasher: hasher,
            signingKeys: signingKeys(store, configuration),
            mailer: sendsMail ? AccountMailer(outbox: outbox, issuer: issuer) : nil, assertionIssuerKeys: assertionIssuerKeys,
            backChannelNotifier: backChannelNotifier)
        let admin = Administration(store: store, passwordHasher: hasher, now: { clock.now })
        let native = try await admin.registerClient(
            type: .native, name: "Notes", redirectURIs: ["com.example.notes:/oauth2redirect", "http://127.0.0.1/callback"],
            scopes: ["profile", "activity", "sleep"], logoURI: "https://notes.example/logo.png",
            consentMarkdown: "Notes keeps **your** notes. <script>alert(1)</script> [site](javascript:alert(2))",
            privacyPolicyURI: "https://notes.example/privacy")
        let native2 = try await admin.registerClient(
            type: .native, name: "Other", redirectURIs: ["com.example.other:/cb"], scopes: ["profile"])
        let web = try await admin.registerClient(
            type: .web, name: "Web App", redirectURIs: ["https://web.example/cb"], scopes: ["profile", "activity"])
        let alice = try await admin.createUser(username: "alice", displayName: "Alice Liddell", password: password)
        let bob = try await admin.createUser(username: "bob", displayName: nil, password: "battery-staple")
        let spa = try await admin.registerClient(
            type: .browser, name: "Single Page", redirectURIs: ["https://spa.example/cb"], scopes: ["profile", "activity"],
            allowImplicit: true)
        let service = try await admin.registerClient(
            type: .service, name: "Reports", redirectURIs: [], scopes: ["activity", "sleep"])
        let personal = try await admin.registerClient(
            type: .native, name: "Alice's script", redirectURIs: ["http://127.0.0.1/callback"], scopes: ["profile"],
            ownerUsername: "alice")
        return Fixture(
            directory: directory, store: store, server: server, admin: admin, clock: clock, native: native.client,
            native2: native2.client, web: web.client, webSecret: web.secret!, alice: alice, spa: spa.client,
            service: service.client, serviceSecret: service.secret!, personal: personal.client, bob: bob)
    }

    /// The same data folder opened by a new store and server, as after a restart.
    public func reopened() throws -> Fixture {
        let store = try SQLiteStore(path: directory.appendingPathComponent("latchkey.sqlite").path)
        let hasher = BcryptPasswordHasher(cost: 4, workers: Fixture.passwordWorkers)
        let server = AuthorizationServer(
            store: store, configuration: self.server.configuration, passwordHasher: hasher,
            signingKeys: Self.signingKeys(store, self.server.configuration))
        let admin = Administration(store: store, passwordHasher: hasher, now: { [clock] in clock.now })
        return Fixture(
            directory: directory, store: store, server: server, admin: admin, clock: clock, native: native,
            native2: native2, web: web, webSecret: webSecret, alice: alice, spa: spa, service: service,
            serviceSecret: serviceSecret, personal: personal, bob: bob)
    }

    /// A browser session signed in as alice (or bob).
    public func signedInSession(as username: String = "alice") async throws -> BrowserSession {
        try await signedIn(as: username).session
    }

    /// A browser session signed in as alice (or bob), with the cookie value that names it.
    public func signedIn(as username: String = "alice") async throws -> (session: BrowserSession, cookie: String) {
        let anonymous = try await server.sessions.session(cookie: nil).session
        let password = username == "alice" ? Self.password : "battery-staple"
        let form = FormParameters([("csrf_token", anonymous.csrfToken), ("username", username), ("password", password)])
        guard
            case .signedIn(let context, _) = try await server.sessions.signIn(
                form, session: anonymous, clientAddress: "127.0.0.1")
        else {
            throw FixtureError("sign-in failed")
        }
        guard let cookie = context.newCookie else { throw FixtureError("no session cookie") }
        return (context.session, cookie)
    }

    /// The messages the server queued and not yet read here, opened, oldest first (marked sent).
    public func mail() async throws -> [OutgoingMail] {
        let outbox = MailOutbox(
            store: store, keyEncryptionKey: Self.keyEncryptionKey, messageIDDomain: "latchkey.test", now: { [clock] in clock.now }
        )
        let taken = Mutex<[OutgoingMail]>([])
        try await outbox.deliverDue(limit: 1_000) { due in
            taken.withLock { $0.append(due.mail) }
            return .sent
        }
        return taken.withLock { $0 }
    }

    /// HTTP Basic credentials for the web client.
    public var webBasic: String {
        "Basic " + Data("\(web.id):\(webSecret)".utf8).base64EncodedString()
    }

    /// HTTP Basic credentials for the service client.
    public var serviceBasic: String {
        "Basic " + Data("\(service.id):\(serviceSecret)".utf8).base64EncodedString()
    }

    /// Runs authorize → consent (granting `grant`, default all) and returns the code.
    public func code(
        client: Client? = nil, scope: String = "profile activity", redirectURI: String? = "http://127.0.0.1:5000/callback",
        verifier: CodeVerifier? = Fixture.verifier, state: String? = "s1", grant: [String]? = nil,
        session: BrowserSession? = nil, resource: String? = nil, extra: [(String, String)] = []
    ) async throws -> String {
        let client = client ?? native
        var parameters = [("response_type", "code"), ("client_id", client.id.rawValue), ("scope", scope)] + extra
        if let redirectURI { parameters.append(("redirect_uri", redirectURI)) }
        if let resource { parameters.append(("resource", resource)) }
        if let state { parameters.append(("state", state)) }
        if let verifier {
            parameters += [("code_challenge", verifier.s256Challenge), ("code_challenge_method", "S256")]
        }
        let session = if let session { session } else { try await signedInSession() }
        var step = try await server.authorization.authorize(FormParameters(parameters), session: session)
        if case .consent(let prompt) = step {
            var form = [("csrf_token", session.csrfToken), ("request", prompt.pendingID), ("decision", "allow")]
            for name in grant ?? prompt.scopes.map(\.name) { form.append(("scope", name)) }
            step = try await server.authorization.decide(FormParameters(form), session: session)
        }
        guard case .redirect(let location) = step, let code = Self.parameter("code", in: location) else {
            throw FixtureError("no code: \(step)")
        }
        return code
    }

    /// POSTs a token request to the server's token endpoint logic.
    public func token(_ parameters: [(String, String)], authorization: String? = nil) async
        -> Result<TokenResponse, TokenEndpointError>
    {
        await server.tokenEndpoint.token(TokenRequest(body: FormParameters(parameters), authorization: authorization))
    }

    /// Exchanges a code from ``code(client:scope:redirectURI:verifier:state:grant:session:resource:)`` for the native client.
    public func exchange(
        _ code: String, client: Client? = nil, redirectURI: String? = "http://127.0.0.1:5000/callback",
        verifier: String? = Fixture.verifier.value
    ) async -> Result<TokenResponse, TokenEndpointError> {
        var parameters = [("grant_type", "authorization_code"), ("code", code), ("client_id", (client ?? native).id.rawValue)]
        if let redirectURI { parameters.append(("redirect_uri", redirectURI)) }
        if let verifier { parameters.append(("code_verifier", verifier)) }
        return await token(parameters)
    }

    public func refresh(_ refreshToken: String, client: Client? = nil, scope: String? = nil) async
        -> Result<TokenResponse, TokenEndpointError>
    {
        var parameters = [
            ("grant_type", "refresh_token"), ("refresh_token", refreshToken), ("client_id", (client ?? native).id.rawValue),
        ]
        if let scope { parameters.append(("scope", scope)) }
        return await token(parameters)
    }

    /// Whether `/userinfo` accepts the access token.
    public func isAlive(_ accessToken: String) async throws -> Bool {
        if case .success = try await server.userInfo.claims(authorization: "Bearer \(accessToken)") { return true }
        return false
    }

    public static let verifier = CodeVerifier("01234567890123456789012345678901234567890123456789")!

    /// The decoded value of a query parameter of a URL (or `nil`).
    public static func parameter(_ name: String, in url: String) -> String? {
        guard let query = url.split(separator: "?", maxSplits: 1).last.map(String.init),
            let parameters = try? FormParameters(decoding: query.split(separator: "#").first.map(String.init) ?? "")
        else { return nil }
        return parameters[name]
    }
}

public struct FixtureError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension Result {
    /// The success value, or `nil`.
    public var value: Success? { try? get() }
    /// The failure, or `nil`.
    public var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
