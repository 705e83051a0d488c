import Foundation
import LatchkeyCore

/// What the browser is shown next in the authorization flow.
public enum AuthorizationStep: Sendable {
    /// An error page; never a redirect (unknown client, unmatched redirect URI, expired request).
    case errorPage(OAuthError)
    /// 403: a form without a valid CSRF token, or a request that belongs to another session.
    case forbidden(String)
    /// 303 to the client (a code, or an error) or to another page of the server.
    case redirect(String)
    /// `response_mode=form_post`: a page whose form the browser posts to the client.
    case formPost(FormPostResponse)
    /// The login form for a pending request, prefilled with `loginHint`; `again` when the request
    /// needs a new sign-in (`prompt=login`, `max_age`, another user's `id_token_hint`), which
    /// upstream providers are asked for too;
    /// or, with `identityProvider` (`idp_hint`), that upstream provider's sign-in.
    case signIn(pendingID: String, loginHint: String?, again: Bool, identityProvider: String? = nil)
    /// The sign-up form for a pending request (`prompt=create`).
    case signUp(pendingID: String)
    /// The second step for a pending request that needs a stronger sign-in than the session's
    /// (`acr_values`, or the second-factor policy), for a user who has a second factor.
    case secondFactor(pendingID: String)
    /// The set-up of a second factor, for a pending request that needs one of a user who has none.
    case setUpSecondFactor(pendingID: String)
    /// The consent page.
    case consent(ConsentPrompt)
}

/// An authorization response for `response_mode=form_post` (OAuth 2.0 Form Post Response Mode
/// §2): the fields of an HTML form the browser posts to `action`, the redirect URI.
public struct FormPostResponse: Sendable, Equatable {
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
    }

    public var action: String
    public var fields: [Field]

    /// A field's value, for tests.
    public func value(_ name: String) -> String? { fields.first { $0.name == name }?.value }
}

/// Everything the consent page shows, taken from the server's own records (docs/threat-model.md T61).
public struct ConsentPrompt: Sendable {
    public var pendingID: String
    public var client: Client
    /// The requested scopes with their human descriptions, in the order asked.
    public var scopes: [ScopeDefinition]
    public var csrfToken: String
    /// For the implicit grant: the token lifetimes the user may choose from (seconds, label).
    public var lifetimeChoices: [(seconds: Int, label: String)]
    /// What allowing a scope shares, by scope name, in the user's own values (`profile`: the name
    /// and username; `email`: the address), so the user sees exactly what the app would be told.
    public var sharedClaims: [String: String]
    /// The resources (APIs, MCP servers) the app asks to reach on the user's behalf (RFC 8707).
    public var resources: [ProtectedResource]
    /// Where the answer goes: the page names its host, so a user can tell an app on this device
    /// from a web site somewhere else.
    public var redirectURI: String?
    /// A device authorization request (RFC 8628): it started on another device, so the page
    /// warns the user to go on only if they started it themselves (§5.4, remote phishing).
    public var fromAnotherDevice: Bool

    public init(
        pendingID: String, client: Client, scopes: [ScopeDefinition], csrfToken: String,
        lifetimeChoices: [(seconds: Int, label: String)], sharedClaims: [String: String] = [:],
        resources: [ProtectedResource] = [], redirectURI: String? = nil, fromAnotherDevice: Bool = false
    ) {
        self.fromAnotherDevice = fromAnotherDevice
        self.redirectURI = redirectURI
        self.resources = resources
        self.sharedClaims = sharedClaims
        self.pendingID = pendingID
        self.client = client
        self.scopes = scopes
        self.csrfToken = csrfToken
        self.lifetimeChoices = lifetimeChoices
    }
}

/// The authorization endpoint (RFC 6749 §3.1) and what a browser does after it: sign-in is
/// asked for, consent shown and decided, and a code, an implicit token or a device approval
/// (RFC 8628 §3.3, entered at `/device`) issued. It reads clients, users and the catalogues, keeps
/// pending requests and consent, stores codes and implicit grants, settles device requests and
/// counts user-code entries, and touches nothing else.
public struct AuthorizationEndpoint: Sendable, ServerContextual {
    let requests: AuthorizationRequestValidator
    let pushed: PushedAuthorizationEndpoint
    let clients: any ClientStore
    let users: any UserStore
    let pendingRequests: any SessionStore
    let consents: any ConsentStore
    let catalogue: any ScopeCatalogueStore & ResourceStore
    let codes: any GrantStore
    let devices: any DeviceAuthorizationStore
    let throttles: any ThrottleStore
    let issuance: TokenIssuance
    let secondFactors: SecondFactors
    let context: ServerContext

    /// `GET /oauth2/authorize`: validates the request, remembers it for this browser session, and
    /// asks for sign-in or consent, or answers at once when consent is remembered. A request that
    /// carries a `request_uri` is the pushed request it names (RFC 9126 §4).
    public func authorize(_ parameters: FormParameters, session: BrowserSession) async throws -> AuthorizationStep {
        var parameters = parameters
        var pushed = false
        do {
            if let stored = try await self.pushed.pushedParameters(parameters) {
                parameters = stored
                pushed = true
            }
        } catch let error as OAuthError {
            return .errorPage(error)
        }
        let request: ValidatedAuthorizationRequest
        switch try await requests.validateAuthorizationRequest(parameters, pushed: pushed) {
        case .failure(.page(let error)):
            return .errorPage(error)
        case .failure(.redirect(let error, let redirectURI, let state, let mode)):
            return requests.authorizationResponse(redirectURI: redirectURI, error.redirectParameters, state: state, mode: mode)
        case .success(let valid):
            request = valid
        }
        let openID = request.openID
        // prompt=login and max_age set the oldest sign-in that will do; so does a hint naming
        // someone other than the signed-in user (they must sign in as the hinted user).
        var authenticatedAfter: Date? = openID.maxAge.map { now.addingTimeInterval(-TimeInterval($0)) }
        if openID.demandsSignIn || (openID.hintedSubject != nil && openID.hintedSubject != session.userID) {
            authenticatedAfter = now
        }
        let pending = PendingAuthorization(
            id: PendingRequestID(rawValue: RandomToken.generate(.pendingRequest)), sessionIDHash: session.idHash,
            clientID: request.client.id,
            redirectURI: request.redirectURI, redirectURIParameter: request.redirectURIParameter, scope: request.scope,
            state: request.state, codeChallenge: request.codeChallenge, responseType: request.responseType,
            nonce: openID.nonce, authenticatedAfter: authenticatedAfter, promptConsent: openID.prompt.contains(.consent),
            hintedSubject: openID.hintedSubject, resources: ResourceSet(request.resources.map(\.uri)),
            dpopJKT: request.dpopJKT, requiredLevel: openID.requiredLevel, responseMode: request.responseMode,
            createdAt: now,
            expiresAt: now.addingTimeInterval(configuration.pendingRequestLifetime))
        let interactive = !openID.prompt.contains(.none)
        // prompt=create: sign-up first, then on with the request as after any sign-in.
        if openID.prompt.contains(.create) {
            try await pendingRequests.insertPendingAuthorization(pending)
            return .signUp(pendingID: pending.id.rawValue)
        }
        // prompt=none: no page at all (OpenID Connect Core §3.1.2.6).
        guard let userID = signedInUser(session, for: pending) else {
            if !interactive {
                return errorResponse(OAuthError(.loginRequired, "The user is not signed in."), for: pending)
            }
            try await pendingRequests.insertPendingAuthorization(pending)
            return .signIn(
                pendingID: pending.id.rawValue, loginHint: openID.loginHint,
                again: session.userID != nil || pending.authenticatedAfter != nil,
                identityProvider: openID.identityProviderHint)
        }
        // Stored only if a page will continue it: a request answered at once (consent remembered)
        // costs no write of its own.
        return try await proceed(
            pending, client: request.client, userID: userID, session: session, interactive: interactive, stored: false)
    }

    /// `GET /consent?request=…` after sign-in: continues a pending request of this session.
    public func resume(pendingID: String, session: BrowserSession) async throws -> AuthorizationStep {
        guard let pending = try await pendingRequests.pendingAuthorization(id: PendingRequestID(rawValue: pendingID)),
            pending.expiresAt > now,
            pending.sessionIDHash == session.idHash,
            let client = try await clients.client(id: pending.clientID)
        else { return .errorPage(Self.expiredRequest) }
        guard let userID = signedInUser(session, for: pending) else {
            return .signIn(
                pendingID: pending.id.rawValue, loginHint: nil, again: session.userID != nil || pending.authenticatedAfter != nil)
        }
        return try await proceed(pending, client: client, userID: userID, session: session)
    }

    /// Refuses a personal app to anyone but its owner, and skips the consent page when the user
    /// already granted every requested scope to this client, or when the client is first-party
    /// (then the consent is recorded as if given, so the account page lists the app), unless
    /// `prompt=consent` asked for the page. Not `interactive` (`prompt=none`), a page that would be
    /// shown is `consent_required` instead. `stored`: whether `pending` is in the store already; if
    /// not, it is stored only before a page that continues it, and otherwise decided as it is.
    func proceed(
        _ pending: PendingAuthorization, client: Client, userID: UserID, session: BrowserSession, interactive: Bool = true,
        stored: Bool = true
    ) async throws -> AuthorizationStep {
        let authTime = session.createdAt
        // Read with the session, before anything is decided: what this request stores in the end
        // is stored only if no revocation of the user's access came in between (docs/threat-model.md RV23).
        guard let accessEpoch = session.accessEpoch else {
            try await keep(pending, stored: stored)
            return .signIn(pendingID: pending.id.rawValue, loginHint: nil, again: true)
        }
        if let stronger = try await strongerSignIn(
            pending, userID: userID, session: session, interactive: interactive, stored: stored)
        {
            return stronger
        }
        if let refusal = refusal(of: userID, for: pending, client: client) {
            _ = try await take(pending, stored: stored)
            return try await refuse(refusal, pending)
        }
        if !pending.promptConsent, let consent = try await consents.consent(userID: userID, clientID: client.id),
            pending.scope.isSubset(of: consent.scope), consent.covers(pending.scope, for: pending.resources),
            let taken = try await take(pending, stored: stored)
        {
            return try await complete(
                taken, userID: userID, accessEpoch: accessEpoch, scope: taken.scope, lifetime: nil, authTime: authTime,
                amr: session.amr ?? .password, sid: session.sid)
        }
        if client.firstParty, !pending.promptConsent, let taken = try await take(pending, stored: stored) {
            try await recordConsent(userID: userID, clientID: client.id, granted: taken.scope, resources: taken.resources)
            event(.consentFirstParty, ["client_id": "\(client.id)", "user_id": "\(userID)", "scope": "\(taken.scope)"])
            return try await complete(
                taken, userID: userID, accessEpoch: accessEpoch, scope: taken.scope, lifetime: nil, authTime: authTime,
                amr: session.amr ?? .password, sid: session.sid)
        }
        if !interactive {
            _ = try await take(pending, stored: stored)
            return try await refuse(OAuthError(.consentRequired, "The user has not consented to this request."), pending)
        }
        try await keep(pending, stored: stored)
        let definitions = try await catalogue.scopeCatalogue()
        let scopes = pending.scope.map { name in
            definitions.first { $0.name == name } ?? ScopeDefinition(name: name, description: name)
        }
        return .consent(
            ConsentPrompt(
                pendingID: pending.id.rawValue, client: client, scopes: scopes, csrfToken: session.csrfToken,
                lifetimeChoices: pending.responseType == .token ? Self.implicitLifetimes : [],
                sharedClaims: try await users.user(id: userID).map(Self.sharedClaims) ?? [:],
                resources: pending.resources.isEmpty ? [] : try await catalogue.resources(uris: pending.resources),
                redirectURI: pending.deviceCodeHash == nil ? pending.redirectURI : nil,
                fromAnotherDevice: pending.deviceCodeHash != nil))
    }

    /// The step that comes first when the session's sign-in is weaker than `pending` needs: the
    /// level its `acr_values` demand, or two factors when the user has a second factor or the
    /// policy requires one (``SecondFactorPolicy``). A user with a second factor is asked for it;
    /// one without sets one up. Not `interactive` (`prompt=none`), the request fails with `interaction_required`.
    /// `stored` as for ``proceed(_:client:userID:session:interactive:stored:)``.
    func strongerSignIn(
        _ pending: PendingAuthorization, userID: UserID, session: BrowserSession, interactive: Bool, stored: Bool = true
    ) async throws -> AuthorizationStep? {
        let level = (session.amr ?? .password).level
        var needed = pending.requiredLevel ?? .oneFactor
        if needed <= level, level == .oneFactor, let user = try await users.user(id: userID),
            try await secondFactors.needsTwoFactors(user)
        {
            needed = .twoFactors
        }
        guard needed > level else { return nil }
        guard interactive else {
            _ = try await take(pending, stored: stored)
            return try await refuse(
                OAuthError(.interactionRequired, "The request needs a second factor, which takes a page."), pending)
        }
        try await keep(pending, stored: stored)
        return try await secondFactors.hasSecondFactor(userID)
            ? .secondFactor(pendingID: pending.id.rawValue) : .setUpSecondFactor(pendingID: pending.id.rawValue)
    }

    /// `pending` taken from the store to be decided, once (`nil` when another request took it
    /// first), or as it is when it was never stored.
    func take(_ pending: PendingAuthorization, stored: Bool) async throws -> PendingAuthorization? {
        stored ? try await pendingRequests.takePendingAuthorization(id: pending.id) : pending
    }

    /// Stores `pending` if it is not yet, before a page that continues it (and names its id).
    func keep(_ pending: PendingAuthorization, stored: Bool) async throws {
        if !stored { try await pendingRequests.insertPendingAuthorization(pending) }
    }

    /// Why `userID` may not authorize `pending` whatever they would consent to, or `nil`: signed
    /// in as someone else than the `id_token_hint` names (OpenID Connect Core §3.1.2.1), or not the
    /// owner of a personal app. The consent page and its form both ask here, so a form posted
    /// without the page cannot skip it (docs/threat-model.md RV13).
    func refusal(of userID: UserID, for pending: PendingAuthorization, client: Client) -> OAuthError? {
        if let hinted = pending.hintedSubject, hinted != userID {
            return OAuthError(.loginRequired, "The signed-in user is not the one the id_token_hint names.")
        }
        if let owner = client.ownerUserID, owner != userID {
            event(.authorizationRefusedNotOwner, ["client_id": "\(client.id)", "user_id": "\(userID)"])
            return OAuthError(.accessDenied, "This application can be authorized only by the user who owns it.")
        }
        return nil
    }

    /// `POST /oauth2/authorize`: the user's consent decision (docs/design.md §3). Only scopes that were
    /// requested can be granted, whatever the form says (docs/threat-model.md T50); a request is decided once.
    public func decide(_ form: FormParameters, session: BrowserSession) async throws -> AuthorizationStep {
        guard !form.isRepeated("csrf_token"), !form.isRepeated("request"), !form.isRepeated("decision") else {
            return .forbidden("The form was malformed.")
        }
        guard let csrf = form["csrf_token"], ConstantTime.equals(csrf, session.csrfToken) else {
            return .forbidden("This form has expired or did not come from this site. Go back to the app and start again.")
        }
        // The access epoch is read with the session, before anything is decided (docs/threat-model.md RV23).
        guard let userID = session.userID, let accessEpoch = session.accessEpoch else { return .forbidden("Sign in first.") }
        guard let pendingID = form["request"],
            let pending = try await pendingRequests.pendingAuthorization(id: PendingRequestID(rawValue: pendingID)),
            pending.sessionIDHash == session.idHash
        else { return .errorPage(Self.expiredRequest) }
        // The form cannot stand in for the fresh sign-in that prompt=login or max_age asked for,
        // nor for the second factor that acr_values or the policy asks for.
        guard signedInUser(session, for: pending) != nil else {
            return .signIn(pendingID: pending.id.rawValue, loginHint: nil, again: true)
        }
        if let stronger = try await strongerSignIn(pending, userID: userID, session: session, interactive: true) {
            return stronger
        }
        guard let taken = try await pendingRequests.takePendingAuthorization(id: pending.id),
            taken.expiresAt > now
        else {
            return .errorPage(Self.expiredRequest)
        }
        guard let client = try await clients.client(id: taken.clientID), requests.documents.isAllowed(client) else {
            return .errorPage(Self.expiredRequest)
        }
        if let refusal = refusal(of: userID, for: taken, client: client) {
            return try await refuse(refusal, taken)
        }
        guard form["decision"] == "allow" else {
            event(.consentDenied, ["client_id": "\(taken.clientID)", "user_id": "\(userID)"])
            return try await refuse(OAuthError(.accessDenied, "The user denied the request."), taken)
        }
        let granted = taken.scope.intersection(ScopeSet(form.all("scope")))
        if granted.isEmpty {
            return try await refuse(OAuthError(.accessDenied, "The user granted none of the requested scopes."), taken)
        }
        try await recordConsent(userID: userID, clientID: taken.clientID, granted: granted, resources: taken.resources)
        event(.consentGranted, ["client_id": "\(taken.clientID)", "user_id": "\(userID)", "scope": "\(granted)"])
        let lifetime = form["lifetime"].flatMap(Int.init).flatMap { chosen in
            Self.implicitLifetimes.first { $0.seconds == chosen }
        }
        return try await complete(
            taken, userID: userID, accessEpoch: accessEpoch, scope: granted, lifetime: lifetime.map { TimeInterval($0.seconds) },
            authTime: session.createdAt, amr: session.amr ?? .password, sid: session.sid)
    }

    /// Remembers consent to `granted`, for each of `resources`, added to what the user granted the
    /// client before.
    func recordConsent(userID: UserID, clientID: ClientID, granted: ScopeSet, resources: ResourceSet) async throws {
        let previous = try await consents.consent(userID: userID, clientID: clientID)
        var byResource = previous?.scopesByResource ?? [:]
        for uri in resources { byResource[uri] = (byResource[uri] ?? ScopeSet([])).union(granted) }
        try await consents.saveConsent(
            ConsentRecord(
                userID: userID, clientID: clientID, scope: (previous?.scope ?? ScopeSet([])).union(granted),
                scopesByResource: byResource, updatedAt: now))
    }

    /// Answers a consented request: a code, or for the implicit grant an access token. What is
    /// issued is stored only while the user's access epoch is still `accessEpoch`, the one read
    /// with the session before the decision (docs/threat-model.md RV23).
    func complete(
        _ pending: PendingAuthorization, userID: UserID, accessEpoch: Int, scope: ScopeSet, lifetime: TimeInterval?,
        authTime: Date, amr: AuthenticationMethods, sid: String
    ) async throws -> AuthorizationStep {
        let user = (id: userID, accessEpoch: accessEpoch, amr: amr, sid: sid)
        if let deviceCodeHash = pending.deviceCodeHash {
            return try await approveDevice(
                pending, deviceCodeHash: deviceCodeHash, user: user, scope: scope, authTime: authTime)
        }
        switch pending.responseType {
        case .code:
            return try await issueCode(for: pending, user: user, scope: scope, authTime: authTime)
        case .token:
            let seconds = lifetime ?? TimeInterval(Self.implicitLifetimes[0].seconds)
            return try await issueImplicitToken(
                for: pending, user: user, scope: scope, lifetime: seconds, authTime: authTime)
        }
    }

    /// The user a request is decided for, with their access epoch as read with the session and
    /// how the session signed in.
    typealias DecidingUser = (id: UserID, accessEpoch: Int, amr: AuthenticationMethods, sid: String)

    /// The answer when the user's access was revoked while the request was being decided.
    static let accessChanged = OAuthError(
        .accessDenied, "The user's access was revoked while this request was being decided. Start again.")

    /// An error answer for a pending request, in its response mode.
    func errorResponse(_ error: OAuthError, for pending: PendingAuthorization) -> AuthorizationStep {
        requests.authorizationResponse(
            redirectURI: pending.redirectURI, error.redirectParameters, state: pending.state,
            mode: pending.effectiveResponseMode)
    }

    /// Stores a new single-use code and returns the redirect that carries it (RFC 6749 §4.1.2).
    func issueCode(for pending: PendingAuthorization, user: DecidingUser, scope: ScopeSet, authTime: Date) async throws
        -> AuthorizationStep
    {
        let code = SplitToken.generate(.authorizationCode, issuedAt: now)
        let stored = try await codes.insertAuthorizationCode(
            AuthorizationCodeRecord(
                codeHash: CodeHash(issued: code), clientID: pending.clientID, userID: user.id,
                redirectURI: pending.redirectURI, redirectURIParameter: pending.redirectURIParameter, scope: scope,
                codeChallenge: pending.codeChallenge, createdAt: now,
                expiresAt: now.addingTimeInterval(configuration.codeLifetime), nonce: pending.nonce, authTime: authTime,
                resources: pending.resources, verifierDigest: code.verifierDigest, dpopJKT: pending.dpopJKT,
                amr: user.amr, sid: user.sid),
            whileAccessEpoch: user.accessEpoch)
        guard stored else {
            event(.authorizationAccessChanged, ["client_id": "\(pending.clientID)", "user_id": "\(user.id)"])
            return errorResponse(Self.accessChanged, for: pending)
        }
        return requests.authorizationResponse(
            redirectURI: pending.redirectURI, [("code", code.value)], state: pending.state, mode: pending.effectiveResponseMode)
    }

    /// The consent page's "shares" line for `profile` and `email`.
    static func sharedClaims(_ user: User) -> [String: String] {
        var shared = ["profile": [user.displayName, user.username.rawValue].compactMap { $0 }.joined(separator: " · ")]
        shared["email"] = user.email ?? "no address on file"
        return shared
    }

    static let expiredRequest = OAuthError.invalidRequest(
        "This sign-in request has expired or was started in another browser. Go back to the app and start again.")
}

extension AuthorizationEndpoint {
    /// The name of the app a pending authorization request comes from, for the sign-in page.
    public func clientName(pendingID: String) async throws -> String? {
        try await pendingClient(pendingID: pendingID)?.name
    }

    /// The client a pending request is for, which the sign-in page names (and marks when this
    /// server has not verified it, as the consent page does).
    public func pendingClient(pendingID: String) async throws -> Client? {
        guard let pending = try await pendingRequests.pendingAuthorization(id: PendingRequestID(rawValue: pendingID)) else {
            return nil
        }
        return try await clients.client(id: pending.clientID)
    }
}
