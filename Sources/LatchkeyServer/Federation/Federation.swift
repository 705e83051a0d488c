import Foundation
import LatchkeyClient
import LatchkeyCore

/// Why a sign-in through an upstream provider did not complete: said on a page, never half
/// signed in (docs/accounts.md, "Upstream identity providers").
public enum FederationFailure: Error, Sendable, Equatable {
    /// No enabled provider of that name: 404.
    case unknownProvider
    /// The callback is not one this browser is waiting for: no state, another browser's or
    /// provider's, expired or used (docs/threat-model.md FD1, FD2).
    case notStartedHere
    /// The provider answered with an error, or something its answers must not be (`iss`, the ID
    /// token's checks, the code exchange).
    case upstream(String)
    /// The person cancelled at the provider (`access_denied`).
    case cancelled
    /// The provider is not usable as configured (discovery, its secret).
    case misconfigured(String)
    /// A rule here refuses the sign-in or link: 403.
    case refused(String)

    /// What the page says.
    public var message: String {
        switch self {
        case .unknownProvider: "There is no such way to sign in here."
        case .notStartedHere:
            "This sign-in was not started in this browser, or it expired or was finished already. Start again from the sign-in page."
        case .upstream(let reason): "The provider's answer was refused: \(reason)"
        case .cancelled: "You cancelled the sign-in at the provider. Nothing was changed."
        case .misconfigured: "This way to sign in is not working right now. Tell the people who run this site."
        case .refused(let reason): reason
        }
    }

    /// What the log says: the page's message, and for a provider not working as configured, why.
    var detail: String {
        if case .misconfigured(let reason) = self { return "misconfigured: " + reason }
        return message
    }

    /// Whether it is a refusal by a rule here (403) rather than a bad request (400).
    public var isRefusal: Bool {
        if case .refused = self { return true }
        return false
    }
}

/// What a callback from an upstream provider came to.
public enum FederationOutcome: Sendable {
    /// Signed in (or owing the account's second step: ``SignInResult``), going on to the pending
    /// request or the console page `next`.
    case signIn(SignInResult, next: String?)
    /// The signed-in user linked the provider to their account.
    case linked
    case failed(FederationFailure)
}

/// Sign-in through upstream identity providers (docs/accounts.md, "Upstream identity providers"):
/// the round trip there (authorization code with PKCE, `state` bound to the browser session and
/// the provider, `nonce` and the ID token's checks by `LatchkeyClient`), the account it leads to,
/// and the links between accounts here and there. Upstream tokens are used once, to learn who
/// signed in, and not kept.
public struct Federation: Sendable, ServerContextual {
    let store: any FederationStore & UserStore & PasskeyStore
    let sessions: BrowserSessions
    /// Tells the account's address when a provider is linked to it.
    let secondFactors: SecondFactors
    let keyEncryptionKey: KeyEncryptionKey
    let upstream: UpstreamClients
    let context: ServerContext
    /// How long a round trip to a provider may take.
    static let requestLifetime: TimeInterval = 600
    /// How far the provider's clock may be from this one, for `auth_time`.
    static let clockSkew: TimeInterval = 120

    init(
        store: any FederationStore & UserStore & PasskeyStore, sessions: BrowserSessions, secondFactors: SecondFactors,
        keyEncryptionKey: KeyEncryptionKey, upstream: UpstreamClients, context: ServerContext
    ) {
        self.store = store
        self.sessions = sessions
        self.secondFactors = secondFactors
        self.keyEncryptionKey = keyEncryptionKey
        self.upstream = upstream
        self.context = context
    }

    /// The providers the sign-in page offers.
    public func enabledProviders() async throws -> [IdentityProvider] {
        try await store.identityProviders().filter(\.enabled)
    }

    /// `redirect_uri` at the provider: `/federation/NAME/callback`, one per provider, so a code
    /// can only come back to the provider that issued it (mix-up, RFC 9700 §4.4).
    func callbackURL(_ name: String) -> String { issuer + "/federation/" + name + "/callback" }

    /// `GET /federation/NAME/start`: a round trip to the provider for this browser session,
    /// signing in for the pending request `pendingID` or the console page `next`, or with
    /// `linking` a signed-in user's link. With `fresh` (the app asked for `prompt=login` or a
    /// `max_age` the session is past, or the console's re-authentication), the provider is asked
    /// to sign the person in again (`prompt=login`, `max_age=0`) and its ID token's `auth_time`
    /// must show it did; a plain OAuth 2.0 provider cannot show that, so it is refused.
    /// - Returns: the provider's authorization URL to redirect to.
    public func begin(
        provider name: String, session: BrowserSession, pendingID: String?, next: String?, linking: UserID? = nil,
        fresh: Bool = false
    ) async throws -> Result<URL, FederationFailure> {
        guard let provider = try await store.identityProvider(name: name), provider.enabled else {
            return .failure(.unknownProvider)
        }
        if fresh, provider.kind != .openIDConnect {
            return .failure(
                .refused("\(provider.displayName) cannot confirm that you signed in again just now. Sign in another way."))
        }
        let client: OAuthClient
        do {
            client = try await upstream.client(for: provider, at: now)
        } catch {
            let failure = failure(error, provider)
            event(.federationRefused, ["identity_provider": "\(name)", "reason": "\(failure.detail)"])
            return .failure(failure)
        }
        let round = client.beginAuthorization(
            scope: provider.scope.names, redirectURI: callbackURL(name),
            additionalParameters: fresh ? [("prompt", "login")] : [], maxAge: fresh ? 0 : nil)
        let stateHash = FederationStateHash(of: round.state)
        try await store.insertFederationRequest(
            FederationRequest(
                stateHash: stateHash, sessionIDHash: session.idHash, provider: name, nonce: round.nonce,
                sealedCodeVerifier: try keyEncryptionKey.seal(Data(round.codeVerifier.value.utf8), kid: stateHash.rawValue),
                pendingID: pendingID, next: next, linkingUserID: linking, authenticatedAfter: fresh ? now : nil,
                expiresAt: now.addingTimeInterval(Self.requestLifetime))
        )
        return .success(round.authorizationURL)
    }

    /// `GET /federation/NAME/callback`: takes the round trip this browser started with this
    /// provider, exchanges the code, checks who signed in, and signs in (or links) the account.
    public func complete(provider name: String, query: String, session: BrowserSession, clientAddress: String)
        async throws -> FederationOutcome
    {
        guard let parameters = try? FormParameters(decoding: Substring(query)), !parameters.isRepeated("state"),
            let state = parameters["state"], !state.isEmpty
        else { return refused(.notStartedHere, name, clientAddress) }
        guard let provider = try await store.identityProvider(name: name), provider.enabled else {
            return .failed(.unknownProvider)
        }
        guard
            let request = try await store.takeFederationRequest(
                stateHash: FederationStateHash(of: state), sessionIDHash: session.idHash, provider: name, at: now),
            let opened = try? keyEncryptionKey.open(request.sealedCodeVerifier, kid: request.stateHash.rawValue),
            let verifier = CodeVerifier(String(decoding: opened, as: UTF8.self))
        else { return refused(.notStartedHere, name, clientAddress) }
        let identity: UpstreamIdentity
        var authenticatedAt: Date?
        do {
            let client = try await upstream.client(for: provider, at: now)
            let round = AuthorizationSession(
                resuming: client.provider, clientID: provider.clientID, redirectURI: callbackURL(name), scope: provider.scope,
                state: state, codeVerifier: verifier, nonce: request.nonce)
            let tokens = try await client.exchange(redirect: callbackURL(name) + "?" + query, for: round)
            if let after = request.authenticatedAfter {
                // OpenID Connect Core §3.1.2.1: with max_age the ID token must carry auth_time.
                guard let authTime = tokens.identity?.authTime,
                    authTime.timeIntervalSince(after) > -Self.clockSkew
                else { throw FederationFailure.upstream("it did not ask you to sign in again.") }
            }
            authenticatedAt = tokens.identity?.authTime
            identity = try await UpstreamIdentity.of(
                tokens, provider: provider, userinfoEndpoint: client.provider.userinfoEndpoint, upstream: upstream)
        } catch {
            return refused(failure(error, provider), name, clientAddress)
        }
        if let linking = request.linkingUserID {
            return try await link(identity, provider: provider, to: linking, session: session, clientAddress: clientAddress)
        }
        let user: User
        switch try await account(for: identity, at: provider) {
        case .failure(let failure): return refused(failure, name, clientAddress)
        case .success(let found): user = found
        }
        guard user.disabledAt == nil else {
            event(.loginRefusedDisabled, ["user_id": "\(user.id)", "client_address": "\(clientAddress)"])
            return .failed(.refused("This account is disabled. Ask the people who run this site to enable it."))
        }
        // Disabled while the code was being exchanged: its sessions ended, and this one must not begin.
        guard try await store.identityProvider(name: name)?.enabled == true else { return .failed(.unknownProvider) }
        try await store.touchFederatedIdentity(provider: name, subject: identity.subject, at: now)
        event(
            .federationSignedIn, ["user_id": "\(user.id)", "identity_provider": "\(name)", "client_address": "\(clientAddress)"])
        let result = try await sessions.signIn(
            user, firstFactor: .federated(through: name), replacing: session, pendingID: request.pendingID,
            clientAddress: clientAddress, authenticatedAt: authenticatedAt)
        // Only once signed in: someone who holds the upstream account but owes the account's
        // second factor must not rewrite its name and address (where its notices go).
        if provider.updatesProfile, case .signedIn = result { try await updateProfile(of: user, from: identity, at: provider) }
        return .signIn(result, next: request.next)
    }

    /// A failure, recorded.
    func refused(_ failure: FederationFailure, _ name: String, _ clientAddress: String) -> FederationOutcome {
        event(
            .federationRefused,
            ["identity_provider": "\(name)", "reason": "\(failure.detail)", "client_address": "\(clientAddress)"])
        return .failed(failure)
    }

    /// What an error on the way to the provider and back means for the page.
    func failure(_ error: any Error, _ provider: IdentityProvider) -> FederationFailure {
        switch error {
        case let failure as FederationFailure: return failure
        case ClientError.server(let error) where error.code == .accessDenied: return .cancelled
        case ClientError.stateMismatch: return .notStartedHere
        case ClientError.issuerMismatch: return .upstream("it says it came from another issuer than \(provider.displayName).")
        case let error as ClientError: return .upstream(error.description)
        default: return .misconfigured("\(error)")
        }
    }

    /// Names its name and display name are made of.
    public static func isValidName(_ name: String) -> Bool {
        (1...32).contains(name.count) && !name.hasPrefix("-")
            && name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }
    }
}
