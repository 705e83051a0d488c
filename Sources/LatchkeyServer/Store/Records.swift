import Foundation
import LatchkeyCore

/// The kinds of client of docs/design.md §4.
public enum ClientType: String, Sendable, Codable, CaseIterable {
    /// A native or mobile app: public, PKCE required, custom-scheme, https or loopback redirects.
    case native
    /// An app running in a browser: public, PKCE required.
    case browser
    /// A server-side web app: confidential, authenticates with its secret.
    case web
    /// A machine client using client credentials only.
    case service

    /// Whether the client holds a secret (RFC 6749 §2.1).
    public var isConfidential: Bool { self == .web || self == .service }
}

/// How a client came to be known to the server.
public enum ClientRegistration: String, Sendable, Codable, CaseIterable {
    /// By an administrator: the CLI, the console or the admin API.
    case administrator = "admin"
    /// By the client itself, at the registration endpoint (RFC 7591).
    case dynamic
    /// By its `client_id` being the URL of its metadata document (Client ID Metadata Documents).
    case metadataDocument = "metadata_document"

    /// Whether the client named itself: its name and logo are its own claims, which the
    /// consent page says this server has not checked.
    public var isSelfAsserted: Bool { self != .administrator }
}

/// A registered client application.
public struct Client: Sendable, Equatable {
    /// `client_id`.
    public var id: ClientID
    public var type: ClientType
    /// The name shown on the consent page.
    public var name: String
    /// Registered redirect URIs, compared exactly (RFC 9700 §4.1.3).
    public var redirectURIs: [String]
    /// The scopes this client may ask for.
    public var scopes: ScopeSet
    public var logoURI: String?
    /// Markdown shown on the consent page (HTML in it is escaped).
    public var consentMarkdown: String?
    public var privacyPolicyURI: String?
    /// SHA-256 of the client secret; `nil` for public clients.
    public var secretHash: String?
    /// When set, only this user may authorize the client.
    public var ownerUserID: UserID?
    /// `grant_types` (RFC 7591 §2): the grants this client may use, in ``GrantTypes/order``. The
    /// token endpoint refuses any other with `unauthorized_client`; `implicit` lets a browser
    /// client ask for `response_type=token`.
    public var grantTypes: [String] {
        didSet { grantTypes = GrantTypes.ordered(grantTypes) }
    }
    /// A first-party app (one the organisation itself makes) skips the consent page; the consent
    /// is still recorded, so the user sees the app on the account page and can disconnect it.
    public var firstParty: Bool
    /// The access token lifetime for this client, in seconds; `nil` for the server's default.
    public var accessTokenLifetime: Int?
    /// The refresh token lifetime (renewed at each rotation); `nil` for the server's default.
    public var refreshTokenLifetime: Int?
    /// `id_token_signed_response_alg` (OpenID Connect Dynamic Client Registration §2): how this
    /// client's ID tokens are signed.
    public var idTokenSigningAlgorithm: SigningAlgorithm
    /// `post_logout_redirect_uris` (OpenID Connect RP-Initiated Logout §3.1): where the logout
    /// endpoint may send the browser afterwards, compared exactly.
    public var postLogoutRedirectURIs: [String]
    /// Who registered the client.
    public var registration: ClientRegistration
    /// SHA-256 of the registration access token (RFC 7592 §3) of a dynamically registered client.
    public var registrationAccessTokenHash: String?
    /// For a client known by its metadata document: when the cached document must be read again.
    public var metadataExpiresAt: Date?
    /// `require_pushed_authorization_requests` (RFC 9126 §6): this client's authorization requests
    /// are refused unless pushed first.
    public var requirePushedAuthorizationRequests: Bool
    /// `jwks` or `jwks_uri`: the public keys of a confidential client that authenticates with
    /// signed assertions (`private_key_jwt`, RFC 7523 §2.2) instead of a secret; `nil` otherwise.
    public var keys: ClientKeys?
    /// `backchannel_logout_uri` (OpenID Connect Back-Channel Logout 1.0 §2.2): where a web app is
    /// sent a logout token when a session it has a grant from ends; `nil` for none.
    public var backchannelLogoutURI: String?
    public var createdAt: Date

    /// `token_endpoint_auth_method` (RFC 7591 §2): `private_key_jwt` for a client with keys,
    /// `client_secret_basic` for one with a secret (`client_secret_post` is accepted as well),
    /// `none` for a public client.
    public var tokenEndpointAuthMethod: String {
        if keys != nil { return "private_key_jwt" }
        return secretHash != nil || type.isConfidential ? "client_secret_basic" : "none"
    }

    /// A blank client to be filled in by registration: a native one with no name, no redirect
    /// URI and no scope yet.
    public init(id: ClientID, registration: ClientRegistration = .administrator, createdAt: Date) {
        self.init(
            id: id, type: .native, name: "", redirectURIs: [], scopes: ScopeSet([]), registration: registration,
            createdAt: createdAt)
    }

    public init(
        id: ClientID, type: ClientType, name: String, redirectURIs: [String], scopes: ScopeSet, logoURI: String? = nil,
        consentMarkdown: String? = nil, privacyPolicyURI: String? = nil, secretHash: String? = nil,
        ownerUserID: UserID? = nil, allowImplicit: Bool = false, firstParty: Bool = false, accessTokenLifetime: Int? = nil,
        refreshTokenLifetime: Int? = nil, idTokenSigningAlgorithm: SigningAlgorithm = .rs256,
        postLogoutRedirectURIs: [String] = [], registration: ClientRegistration = .administrator,
        registrationAccessTokenHash: String? = nil, metadataExpiresAt: Date? = nil,
        requirePushedAuthorizationRequests: Bool = false, allowDeviceCode: Bool = false, grantTypes: [String]? = nil,
        keys: ClientKeys? = nil, backchannelLogoutURI: String? = nil, createdAt: Date
    ) {
        self.keys = keys
        self.backchannelLogoutURI = backchannelLogoutURI
        self.grantTypes = GrantTypes.ordered(
            grantTypes ?? GrantRegistry.standard.defaultGrantTypes(for: type) + (allowImplicit ? [GrantTypes.implicit] : [])
                + (allowDeviceCode ? [GrantTypes.deviceCode] : []))
        self.requirePushedAuthorizationRequests = requirePushedAuthorizationRequests
        self.registration = registration
        self.registrationAccessTokenHash = registrationAccessTokenHash
        self.metadataExpiresAt = metadataExpiresAt
        self.idTokenSigningAlgorithm = idTokenSigningAlgorithm
        self.postLogoutRedirectURIs = postLogoutRedirectURIs
        self.id = id
        self.type = type
        self.name = name
        self.redirectURIs = redirectURIs
        self.scopes = scopes
        self.logoURI = logoURI
        self.consentMarkdown = consentMarkdown
        self.privacyPolicyURI = privacyPolicyURI
        self.secretHash = secretHash
        self.ownerUserID = ownerUserID
        self.firstParty = firstParty
        self.accessTokenLifetime = accessTokenLifetime
        self.refreshTokenLifetime = refreshTokenLifetime
        self.createdAt = createdAt
    }
}

/// Where the public keys of a client that authenticates with `private_key_jwt` (RFC 7523 §2.2)
/// are: one of the two members RFC 7591 §2 defines for them.
public enum ClientKeys: Sendable, Equatable {
    /// `jwks`: the JWK Set itself, as JSON text.
    case jwks(String)
    /// `jwks_uri`: an https URL the server reads the JWK Set from (through the guarded fetcher,
    /// cached), so the client can rotate its keys without telling the server.
    case jwksURI(String)

    /// The key set's JSON, for `jwks`.
    public var jwks: String? { if case .jwks(let json) = self { json } else { nil } }
    /// The URL, for `jwks_uri`.
    public var jwksURI: String? { if case .jwksURI(let url) = self { url } else { nil } }

    /// From the two stored columns; `nil` when neither is set.
    public init?(jwks: String?, jwksURI: String?) {
        if let jwks { self = .jwks(jwks) } else if let jwksURI { self = .jwksURI(jwksURI) } else { return nil }
    }
}

/// What a user may do beyond signing in to apps.
public enum UserRole: String, Sendable, Codable, CaseIterable {
    /// Manages apps, users and scopes in the admin console.
    case admin
    /// An ordinary user.
    case none
}

/// A resource owner who signs in with a username and password.
public struct User: Sendable, Equatable {
    public var id: UserID
    public var username: Username
    public var displayName: String?
    /// bcrypt hash of the password.
    public var passwordHash: String
    public var role: UserRole
    /// When an administrator disabled the account: it cannot sign in, and what it had granted
    /// was revoked at that moment.
    public var disabledAt: Date?
    /// `email` (OpenID Connect Core §5.1), shared with apps granted the `email` scope.
    public var email: String?
    /// `email_verified`: whether the organisation checked that the address is this user's.
    public var emailVerified: Bool
    /// `updated_at`: when the name or email last changed (the creation time until then).
    public var updatedAt: Date?
    public var createdAt: Date
    /// How many times the user's access was revoked at once (a password change, a disable, a
    /// Disconnect: ``AccessRevocation``). An authorization request reads it before it decides, and
    /// its code or token is stored only while it is unchanged (docs/threat-model.md RV23).
    public var accessEpoch: Int
    /// Whether the account signs in to apps only once ``emailVerified``: set for an account a
    /// person made themselves while sign-up required a verified address.
    public var mustVerifyEmail: Bool
    /// Whether an administrator requires this account to sign in with a second factor, whatever
    /// `require-second-factor` says.
    public var secondFactorRequired: Bool

    public init(
        id: UserID, username: Username, displayName: String?, passwordHash: String, role: UserRole = .none,
        disabledAt: Date? = nil, email: String? = nil, emailVerified: Bool = false, updatedAt: Date? = nil, createdAt: Date,
        accessEpoch: Int = 0, mustVerifyEmail: Bool = false, secondFactorRequired: Bool = false
    ) {
        self.secondFactorRequired = secondFactorRequired
        self.accessEpoch = accessEpoch
        self.mustVerifyEmail = mustVerifyEmail
        self.email = email
        self.emailVerified = emailVerified
        self.updatedAt = updatedAt
        self.id = id
        self.username = username
        self.displayName = displayName
        self.passwordHash = passwordHash
        self.role = role
        self.disabledAt = disabledAt
        self.createdAt = createdAt
    }

    public var isAdmin: Bool { role == .admin && disabledAt == nil }
}

/// One entry of the scope catalogue: what the consent page says a scope lets the app do.
public struct ScopeDefinition: Sendable, Equatable, Codable {
    public var name: String
    public var description: String
    public init(name: String, description: String) {
        self.name = name
        self.description = description
    }
}

/// A browser's session with the server, kept in the store so any instance can read it.
public struct BrowserSession: Sendable, Equatable {
    /// SHA-256 of the cookie value.
    public var idHash: SessionIDHash
    /// The signed-in user, or `nil` before sign-in.
    public var userID: UserID?
    /// The CSRF token every form of this session carries.
    public var csrfToken: String
    public var createdAt: Date
    /// The absolute end of the session, however active it is.
    public var expiresAt: Date
    /// When the session was last used (to the minute); it ends after an idle timeout from here.
    public var lastSeenAt: Date
    /// The signed-in user's ``User/accessEpoch``, read with the session (it is not a column of
    /// the session): in one read, a session that a revocation of the user's access deleted is
    /// either gone or comes with the epoch from before it (docs/threat-model.md RV23). A session
    /// made at sign-in has the epoch its password was checked under. `nil` before sign-in and for
    /// a user gone.
    public var accessEpoch: Int?
    /// How the signed-in user signed in (``userID``), or how far the user named by
    /// ``secondFactorUserID`` has come.
    public var amr: AuthenticationMethods?
    /// The user whose password this session checked and who still owes a second factor: the
    /// session is not signed in until then (``userID`` is `nil`).
    public var secondFactorUserID: UserID?
    /// `sid` (OpenID Connect Back-Channel Logout 1.0 §2.1): the session's identifier in ID tokens
    /// and logout tokens. Made from ``idHash`` (a hash of it, which tells nothing of the cookie)
    /// when the session is, and carried on to the session that replaces it for the same person (a
    /// second factor, a step-up, signing in again), so the apps' sessions keep matching it.
    public var sid: String

    public init(
        idHash: SessionIDHash, userID: UserID?, csrfToken: String, createdAt: Date, expiresAt: Date, lastSeenAt: Date? = nil,
        accessEpoch: Int? = nil, amr: AuthenticationMethods? = nil, secondFactorUserID: UserID? = nil, sid: String? = nil
    ) {
        self.sid = sid ?? Self.sid(of: idHash)
        self.amr = amr
        self.secondFactorUserID = secondFactorUserID
        self.accessEpoch = accessEpoch
        self.idHash = idHash
        self.userID = userID
        self.csrfToken = csrfToken
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.lastSeenAt = lastSeenAt ?? createdAt
    }

    /// The `sid` a session whose cookie hashes to `idHash` starts with.
    public static func sid(of idHash: SessionIDHash) -> String {
        String(RandomToken.hash("sid\n" + idHash.rawValue).prefix(32))
    }
}

/// Failed attempts counted against one key (an account, a client address, a client id) in a
/// fixed window that starts at the first failure.
public struct ThrottleWindow: Sendable, Equatable {
    public var failures: Int
    /// When the window ends and the count starts again from zero.
    public var endsAt: Date

    /// Whole seconds until the window ends (at least 1), for `Retry-After`.
    public func secondsLeft(at now: Date) -> Int { max(1, Int(endsAt.timeIntervalSince(now).rounded(.up))) }

    public init(failures: Int, endsAt: Date) {
        self.failures = failures
        self.endsAt = endsAt
    }
}

/// What the client asked to receive at its redirect URI (RFC 6749 §3.1.1).
public enum ResponseType: String, Sendable {
    /// An authorization code, in the query (§4.1).
    case code
    /// An access token, in the fragment: the implicit grant (§4.2), for opted-in browser clients only.
    case token
}

/// How the authorization response travels back to the client (OAuth 2.0 Multiple Response Type
/// Encoding Practices §2.1; OAuth 2.0 Form Post Response Mode §2).
public enum ResponseMode: String, Sendable {
    /// In the redirect URI's query: the default for `code`.
    case query
    /// In the redirect URI's fragment: the default for `token`.
    case fragment
    /// In an HTML form the browser posts to the redirect URI, so the parameters are in no URL: not
    /// in the history, a `Referer` or the client's web server's access log.
    case formPost = "form_post"

    /// What `response_mode` names when the request sends none.
    public static func defaultMode(for type: ResponseType) -> ResponseMode { type == .token ? .fragment : .query }
}

/// A validated authorization request waiting for the user to sign in and consent, bound to the
/// browser session that made it.
public struct PendingAuthorization: Sendable, Equatable {
    /// The handle the login and consent forms carry.
    public var id: PendingRequestID
    public var sessionIDHash: SessionIDHash
    public var clientID: ClientID
    /// Where the response goes.
    public var redirectURI: String
    /// `redirect_uri` exactly as the request gave it, or `nil` if it was omitted (RFC 6749 §4.1.3).
    public var redirectURIParameter: String?
    public var scope: ScopeSet
    public var state: String?
    /// The S256 `code_challenge`, or `nil` for a confidential client that did not use PKCE.
    public var codeChallenge: String?
    public var responseType: ResponseType
    /// OpenID Connect `nonce`, echoed in the ID token.
    public var nonce: String?
    /// The session must have signed in after this time (`prompt=login`: the request's own
    /// time; `max_age`: that many seconds before it); an older sign-in asks for the password again.
    public var authenticatedAfter: Date?
    /// `prompt=consent`: ask even when consent is remembered (or the app is first-party).
    public var promptConsent: Bool
    /// The `sub` of a verified `id_token_hint`: only that user may complete the request.
    public var hintedSubject: UserID?
    /// `resource` (RFC 8707 §2): the registered resources the tokens are for.
    public var resources: ResourceSet
    /// For a device authorization request (RFC 8628) entered on this browser: the hash of its
    /// device code. The decision then goes to the device, not to a redirect URI.
    public var deviceCodeHash: String?
    /// `dpop_jkt` (RFC 9449 §10): the thumbprint of the DPoP key the code is bound to.
    public var dpopJKT: String?
    /// The level of sign-in the request's `acr_values` demand (``AuthenticationLevel/demanded(by:)``).
    public var requiredLevel: AuthenticationLevel?
    /// `response_mode`, when the request named one.
    public var responseMode: ResponseMode?
    public var createdAt: Date
    public var expiresAt: Date

    /// How the answer goes back: the mode asked for, or the response type's default.
    public var effectiveResponseMode: ResponseMode { responseMode ?? .defaultMode(for: responseType) }

    public init(
        id: PendingRequestID, sessionIDHash: SessionIDHash, clientID: ClientID, redirectURI: String,
        redirectURIParameter: String?,
        scope: ScopeSet, state: String?, codeChallenge: String?, responseType: ResponseType = .code, nonce: String? = nil,
        authenticatedAfter: Date? = nil, promptConsent: Bool = false, hintedSubject: UserID? = nil,
        resources: ResourceSet = .none, deviceCodeHash: String? = nil, dpopJKT: String? = nil,
        requiredLevel: AuthenticationLevel? = nil, responseMode: ResponseMode? = nil, createdAt: Date, expiresAt: Date
    ) {
        self.responseMode = responseMode
        self.requiredLevel = requiredLevel
        self.dpopJKT = dpopJKT
        self.deviceCodeHash = deviceCodeHash
        self.resources = resources
        self.hintedSubject = hintedSubject
        self.nonce = nonce
        self.authenticatedAfter = authenticatedAfter
        self.promptConsent = promptConsent
        self.responseType = responseType
        self.id = id
        self.sessionIDHash = sessionIDHash
        self.clientID = clientID
        self.redirectURI = redirectURI
        self.redirectURIParameter = redirectURIParameter
        self.scope = scope
        self.state = state
        self.codeChallenge = codeChallenge
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// An issued authorization code (stored by selector, or by hash when kept whole), kept after use
/// so a replay can be detected.
public struct AuthorizationCodeRecord: Sendable, Equatable {
    public var codeHash: CodeHash
    /// SHA-256 of the code's verifier (docs/design.md §6); `nil` for a code kept whole.
    public var verifierDigest: String?
    public var clientID: ClientID
    public var userID: UserID
    public var redirectURI: String
    public var redirectURIParameter: String?
    public var scope: ScopeSet
    public var codeChallenge: String?
    public var createdAt: Date
    public var expiresAt: Date
    /// When the code was redeemed; a second redemption is a replay.
    public var consumedAt: Date?
    /// The grant the redemption created, revoked if the code is replayed.
    public var grantID: GrantID?
    /// OpenID Connect `nonce` from the authorization request, for the ID token.
    public var nonce: String?
    /// When the user signed in (the session's start): the ID token's `auth_time`.
    public var authTime: Date?
    /// The resources the user authorized (RFC 8707): the grant's audience.
    public var resources: ResourceSet
    /// `dpop_jkt` (RFC 9449 §10): only a token request with a DPoP proof by this key redeems it.
    public var dpopJKT: String?
    /// How the user signed in (the session's methods): the ID token's `amr` and `acr`.
    public var amr: AuthenticationMethods?
    /// The browser session that approved it (``BrowserSession/sid``): the ID token's `sid`.
    public var sid: String?

    public init(
        codeHash: CodeHash, clientID: ClientID, userID: UserID, redirectURI: String, redirectURIParameter: String?,
        scope: ScopeSet, codeChallenge: String?, createdAt: Date, expiresAt: Date, consumedAt: Date? = nil,
        grantID: GrantID? = nil, nonce: String? = nil, authTime: Date? = nil, resources: ResourceSet = .none,
        verifierDigest: String? = nil, dpopJKT: String? = nil, amr: AuthenticationMethods? = nil, sid: String? = nil
    ) {
        self.amr = amr
        self.sid = sid
        self.dpopJKT = dpopJKT
        self.verifierDigest = verifierDigest
        self.resources = resources
        self.nonce = nonce
        self.authTime = authTime
        self.codeHash = codeHash
        self.clientID = clientID
        self.userID = userID
        self.redirectURI = redirectURI
        self.redirectURIParameter = redirectURIParameter
        self.scope = scope
        self.codeChallenge = codeChallenge
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.consumedAt = consumedAt
        self.grantID = grantID
    }
}

/// One authorization of a client by a user (a token family): revoking it ends every token in it.
public struct GrantRecord: Sendable, Equatable {
    public var id: GrantID
    public var clientID: ClientID
    public var userID: UserID?
    public var scope: ScopeSet
    public var createdAt: Date
    public var revokedAt: Date?
    /// When the user signed in for this grant; ID tokens issued on refresh repeat it (OpenID
    /// Connect Core §12.2).
    public var authTime: Date?
    /// The resources the grant's tokens may be for (RFC 8707): a refresh may ask for fewer.
    public var resources: ResourceSet
    /// How the user signed in for this grant; ID tokens issued on refresh repeat its `amr` and `acr`.
    public var amr: AuthenticationMethods?
    /// For a grant made by a token exchange with an actor (RFC 8693 §4.1): the `act` claim, as
    /// JSON, that its tokens carry at introspection and in a JWT.
    public var actor: String?
    /// The browser session the grant came from (``BrowserSession/sid``): its ID tokens' `sid`, and
    /// what ending that session sends a back-channel logout for.
    public var sid: String?

    public init(
        id: GrantID, clientID: ClientID, userID: UserID?, scope: ScopeSet, createdAt: Date, revokedAt: Date? = nil,
        authTime: Date? = nil, resources: ResourceSet = .none, amr: AuthenticationMethods? = nil, actor: String? = nil,
        sid: String? = nil
    ) {
        self.actor = actor
        self.sid = sid
        self.amr = amr
        self.resources = resources
        self.authTime = authTime
        self.id = id
        self.clientID = clientID
        self.userID = userID
        self.scope = scope
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    /// When the grant expires as stored with `tokens`: when the last of them does, or at once
    /// when there are none (an ID token alone). The purge deletes the grant some time after that,
    /// once no token of it is left (it moves the expiry on when a rotation stored later ones).
    public func expiry(tokens: [TokenRecord]) -> Date {
        tokens.map(\.expiresAt).max() ?? createdAt
    }
}

/// Access or refresh token.
public enum TokenKind: String, Sendable {
    case access, refresh
}

/// An issued token, stored by selector (or by hash when kept whole).
public struct TokenRecord: Sendable, Equatable {
    public var hash: TokenHash
    /// SHA-256 of the token's verifier (docs/design.md §6); `nil` for a token kept whole.
    public var verifierDigest: String?
    public var kind: TokenKind
    public var grantID: GrantID
    public var clientID: ClientID
    public var userID: UserID?
    public var scope: ScopeSet
    public var createdAt: Date
    public var expiresAt: Date
    public var revokedAt: Date?
    /// For a refresh token: when it was exchanged for a successor (rotation).
    public var rotatedAt: Date?
    /// For a rotated refresh token: the hash of its successor, while that successor may still be
    /// replaced within the grace window (docs/threat-model.md decision 3).
    public var successorHash: TokenHash?
    /// For an access token: the hash of the refresh token issued with it.
    public var issuedWith: TokenHash?
    /// For an access token: its audience, the resources it is for (RFC 8707); empty when the
    /// request named none. For a refresh token: the grant's resources.
    public var audience: ResourceSet
    /// `cnf.jkt` (RFC 9449 §6): the thumbprint of the DPoP key the token is bound to; `nil` for a
    /// bearer token. A bound token is accepted only with a proof signed by that key.
    public var keyThumbprint: String?
    /// Read with the token, never stored with it: its grant is revoked, or the user who granted it
    /// is disabled or gone. Such a token is dead whatever its own row says, so a token a racing
    /// refresh wrote while the grant was being revoked opens nothing (docs/threat-model.md RV1, RV2):
    /// a revocation is one write to the grant (or user) row, which every later use reads.
    public var grantEnded = false
    /// Read with the token from its grant, never stored with it: when and how the user signed in
    /// for the grant (``GrantRecord/authTime``, ``GrantRecord/amr``), for introspection's `acr`
    /// and `auth_time` (RFC 9470 §6.2).
    public var grantAuthTime: Date?
    public var grantAMR: AuthenticationMethods?
    /// Read with the token from its grant: the `act` claim of an exchanged token (``GrantRecord/actor``).
    public var grantActor: String?
    /// Read with the token from its grant: the session it came from (``GrantRecord/sid``).
    public var grantSID: String?

    public init(
        hash: TokenHash, kind: TokenKind, grantID: GrantID, clientID: ClientID, userID: UserID?, scope: ScopeSet,
        createdAt: Date, expiresAt: Date, revokedAt: Date? = nil, rotatedAt: Date? = nil, successorHash: TokenHash? = nil,
        issuedWith: TokenHash? = nil, audience: ResourceSet = .none, keyThumbprint: String? = nil,
        verifierDigest: String? = nil
    ) {
        self.verifierDigest = verifierDigest
        self.keyThumbprint = keyThumbprint
        self.audience = audience
        self.hash = hash
        self.kind = kind
        self.grantID = grantID
        self.clientID = clientID
        self.userID = userID
        self.scope = scope
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.rotatedAt = rotatedAt
        self.successorHash = successorHash
        self.issuedWith = issuedWith
    }

    /// Whether the token counts as live at `now`: not revoked, not rotated out (a refresh token
    /// with a successor), not expired. (A just-rotated refresh token's grace retry is decided by
    /// the refresh grant itself, not by this.)
    public func isActive(at now: Date) -> Bool { revokedAt == nil && !grantEnded && rotatedAt == nil && now < expiresAt }
}

/// What a user has consented to for a client, remembered so the page is skipped next time.
public struct ConsentRecord: Sendable, Equatable {
    public var userID: UserID
    public var clientID: ClientID
    public var scope: ScopeSet
    /// The scopes consented for each resource (RFC 8707), by resource URI: consent to `read` at
    /// one resource and `write` at another is not consent to `write` at the first.
    public var scopesByResource: [String: ScopeSet]
    public var updatedAt: Date
    public init(
        userID: UserID, clientID: ClientID, scope: ScopeSet, scopesByResource: [String: ScopeSet] = [:], updatedAt: Date
    ) {
        self.scopesByResource = scopesByResource
        self.userID = userID
        self.clientID = clientID
        self.scope = scope
        self.updatedAt = updatedAt
    }
}

extension ConsentRecord {
    /// Whether the user consented to every scope of `scope` for each of `resources` (trivially
    /// so for none).
    public func covers(_ scope: ScopeSet, for resources: ResourceSet) -> Bool {
        resources.allSatisfy { uri in scope.isSubset(of: scopesByResource[uri] ?? ScopeSet([])) }
    }

    /// The stored form of ``scopesByResource``: a JSON object of URI to space-separated scopes,
    /// keys sorted; `''` for none.
    public static func storeValue(_ scopesByResource: [String: ScopeSet]) -> String {
        guard !scopesByResource.isEmpty,
            let data = try? JSONSerialization.data(
                withJSONObject: scopesByResource.mapValues(\.description), options: [.sortedKeys, .withoutEscapingSlashes])
        else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads ``storeValue(_:)``'s form; anything else is no consent for any resource.
    public static func scopesByResource(storeValue text: String) -> [String: ScopeSet] {
        guard !text.isEmpty, let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String]
        else { return [:] }
        return object.mapValues { ScopeSet($0.split(separator: " ").map(String.init)) }
    }
}
