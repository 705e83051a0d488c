import Foundation
import LatchkeyCore
import Logging

/// Hashes and checks user passwords (bcrypt in production, see `LatchkeyPasswords`). Both are
/// slow on purpose, so an implementation runs them off Swift's cooperative threads.
public protocol PasswordHasher: Sendable {
    /// - Throws: ``PasswordHashingBusy`` when too many hashes are already waiting.
    func hash(_ password: String) async throws -> String
    /// - Throws: ``PasswordHashingBusy`` when too many hashes are already waiting.
    func verify(_ password: String, hash: String) async throws -> Bool
}

/// Password hashing refused for now: too many sign-ins are already being checked. Answer 503
/// with `Retry-After`.
public struct PasswordHashingBusy: Error, Sendable {
    /// Seconds after which trying again is sensible.
    public var retryAfter: Int
    public init(retryAfter: Int) { self.retryAfter = retryAfter }
}

/// The authorization server's logic over plain types: each endpoint takes a parsed request and
/// returns a response value or an ``OAuthError``. No HTTP framework and no database driver here.
public struct AuthorizationServer: Sendable {
    public let store: any Store
    /// The configuration, the clock and where security events go, as every endpoint shares them.
    public let context: ServerContext
    public let passwordHasher: any PasswordHasher
    /// The token endpoint's grants (``GrantRegistry/standard`` unless a test narrows them).
    public var grants: GrantRegistry { tokenEndpoint.grants }
    /// The keys that sign ID tokens, shared with every instance through the store.
    public let signingKeys: SigningKeyring
    /// Fetches client metadata documents; `nil` accepts none, whatever the policy says.
    public let clientMetadataFetcher: (any ClientMetadataFetching)?
    /// The DPoP nonce this instance hands out (RFC 9449 §8).
    public let dpopNonces: DPoPNonces
    /// Client authentication (RFC 6749 §2.3), with only the client and throttle roles.
    let clientAuthentication: ClientAuthentication
    /// `POST /oauth2/revoke` (RFC 7009).
    public let revocation: RevocationEndpoint
    /// `POST /oauth2/introspect` (RFC 7662).
    public let introspection: IntrospectionEndpoint
    /// DPoP proofs (RFC 9449), with only the DPoP role.
    let dpop: DPoPVerifier
    /// Access tokens presented to this server's own resources.
    public let accessTokens: AccessTokenValidation
    /// `GET` or `POST /userinfo` (OpenID Connect Core §5.3).
    public let userInfo: UserInfoEndpoint
    /// Access, refresh and ID tokens, and the rules on resources and scopes, with only the
    /// catalogue roles and the signing keys.
    let issuance: TokenIssuance
    /// `POST /oauth2/token` (RFC 6749 §3.2).
    public let tokenEndpoint: TokenEndpoint
    /// `POST /oauth2/device_authorization` (RFC 8628 §3.1).
    public let deviceAuthorization: DeviceAuthorizationEndpoint
    /// Clients known by their metadata documents.
    let clientMetadataDocuments: ClientMetadataDocuments
    /// Checks authorization requests for the authorization endpoint and PAR.
    public let authorizationRequests: AuthorizationRequestValidator
    /// `POST /oauth2/par` (RFC 9126).
    public let pushedAuthorization: PushedAuthorizationEndpoint
    /// `/oauth2/register` (RFC 7591, RFC 7592).
    public let registration: ClientRegistrationEndpoint
    /// The administration acting on this server's store.
    public let administration: Administration
    /// Browser sessions, sign-in and sign-out.
    public let sessions: BrowserSessions
    /// The second sign-in step, step-up and the set-up of second factors.
    public let secondFactors: SecondFactors
    /// `GET /oauth2/authorize`, consent and the device page's approvals.
    public let authorization: AuthorizationEndpoint
    /// The account page's connected apps.
    public let account: AccountEndpoint
    /// Sign-up, e-mail verification, password reset by e-mail, the account page's changes.
    public let selfService: SelfService
    /// `/oauth2/logout` (OpenID Connect RP-Initiated Logout 1.0).
    public let logout: LogoutEndpoint
    /// The admin console and the admin API.
    public let console: Console
    /// Sign-in through upstream identity providers, and the links to them.
    public let federation: Federation
    /// The sender of queued back-channel logouts; `nil` when the server was given no way to send them.
    public let backChannelLogout: BackChannelLogout?

    public var configuration: ServerConfiguration { context.configuration }
    /// Security events (`code.replay_detected`, `refresh.reuse_detected`, sign-ins): never a secret value.
    public var logger: Logger { context.logger }
    /// The same events, waiting to be stored for the admin console's Activity page.
    public var audit: AuditTrail { context.audit }

    /// - Parameters:
    ///   - assertionIssuerKeys: where the keys of the providers whose assertions the token
    ///     endpoint accepts come from; by default, each provider's discovery document.
    ///   - backChannelNotifier: what POSTs logout tokens to apps; without one, logouts are queued
    ///     and not sent, and the metadata does not offer back-channel logout.
    public init(
        store: any Store, configuration: ServerConfiguration, passwordHasher: any PasswordHasher,
        signingKeys: SigningKeyring, grants: GrantRegistry = .standard, logger: Logger = Logger(label: "latchkey"),
        audit: AuditTrail = AuditTrail(), clientMetadataFetcher: (any ClientMetadataFetching)? = nil,
        dpopNonces: DPoPNonces = DPoPNonces(), mailer: AccountMailer? = nil,
        assertionIssuerKeys: (any AssertionIssuerKeys)? = nil, backChannelNotifier: (any BackChannelNotifying)? = nil
    ) {
        // One client per upstream provider, for sign-ins through it and the keys of its assertions.
        let upstream = UpstreamClients(keyEncryptionKey: signingKeys.keyEncryptionKey)
        let context = ServerContext(configuration: configuration, logger: logger, audit: audit)
        self.context = context
        backChannelLogout = backChannelNotifier.map {
            BackChannelLogout(store: store, signingKeys: signingKeys, notifier: $0, context: context)
        }
        self.dpopNonces = dpopNonces
        self.clientMetadataFetcher = clientMetadataFetcher
        self.signingKeys = signingKeys
        self.store = store
        self.passwordHasher = passwordHasher
        var administration = Administration(
            store: store, passwordHasher: passwordHasher,
            passwordPolicy: PasswordPolicy(minimumLength: configuration.passwordMinimumLength), now: configuration.now,
            logger: logger)
        administration.acceptsLocalhostRedirects = configuration.acceptsLocalhostRedirects
        self.administration = administration
        let documents = ClientMetadataDocuments(
            clients: store, resources: store, administration: administration, fetcher: clientMetadataFetcher,
            context: context)
        clientMetadataDocuments = documents
        let clientAuthentication = ClientAuthentication(
            clients: store, throttles: store, assertions: store, keySets: ClientKeySets(fetcher: clientMetadataFetcher),
            context: context, documentsAccepted: documents.accepted)
        self.clientAuthentication = clientAuthentication
        revocation = RevocationEndpoint(clientAuthentication: clientAuthentication, tokens: store, context: context)
        introspection = IntrospectionEndpoint(clientAuthentication: clientAuthentication, tokens: store, context: context)
        let dpop = DPoPVerifier(proofs: store, nonces: dpopNonces, context: context)
        self.dpop = dpop
        accessTokens = AccessTokenValidation(tokens: store, dpop: dpop, context: context)
        userInfo = UserInfoEndpoint(accessTokens: accessTokens)
        let issuance = TokenIssuance(signingKeys: signingKeys, catalogue: store, context: context)
        self.issuance = issuance
        tokenEndpoint = TokenEndpoint(
            clientAuthentication: clientAuthentication, dpop: dpop, grants: grants,
            services: TokenGrantServices(
                store: store, issuance: issuance, assertionIssuers: assertionIssuerKeys ?? upstream, context: context))
        deviceAuthorization = DeviceAuthorizationEndpoint(
            clientAuthentication: clientAuthentication, devices: store, issuance: issuance, context: context)
        authorizationRequests = AuthorizationRequestValidator(
            documents: documents, issuance: issuance, signingKeys: signingKeys, context: context)
        pushedAuthorization = PushedAuthorizationEndpoint(
            clientAuthentication: clientAuthentication, requests: authorizationRequests, pushedRequests: store,
            throttles: store, context: context)
        sessions = BrowserSessions(
            sessions: store, users: store, throttles: store, factors: store, passwordHasher: passwordHasher, context: context)
        secondFactors = SecondFactors(
            factors: store, throttles: store, sessions: sessions,
            keyEncryptionKey: signingKeys.keyEncryptionKey, mailer: mailer,
            passkeys: Passkeys(store: store, users: store, sessions: sessions, context: context), context: context)
        authorization = AuthorizationEndpoint(
            requests: authorizationRequests, pushed: pushedAuthorization, clients: store, users: store, pendingRequests: store,
            consents: store, catalogue: store, codes: store, devices: store, throttles: store, issuance: issuance,
            secondFactors: secondFactors, context: context)
        account = AccountEndpoint(grants: store, clients: store, context: context)
        selfService = SelfService(
            users: store, links: store, sessionStore: store, throttles: store, sessions: sessions,
            passwordHasher: passwordHasher, passwordPolicy: administration.passwordPolicy, mailer: mailer, context: context)
        logout = LogoutEndpoint(requests: authorizationRequests, clients: store, sessions: store, context: context)
        let federation = Federation(
            store: store, sessions: sessions, secondFactors: secondFactors, keyEncryptionKey: signingKeys.keyEncryptionKey,
            upstream: upstream, context: context)
        self.federation = federation
        console = Console(
            administration: administration, sessions: sessions, account: account, accessTokens: accessTokens,
            clients: store, users: store, sessionStore: store, grants: store, catalogue: store, auditEvents: store,
            mail: store, secondFactors: secondFactors, federation: federation, context: context)
        registration = ClientRegistrationEndpoint(
            clients: store, users: store, resources: store, registrations: store, throttles: store,
            administration: administration, context: context)
    }

    var now: Date { configuration.now() }
    var issuer: String { configuration.issuer }

    /// RFC 8414 and OpenID Provider metadata for what this server supports now (one document for both).
    /// `token` (implicit) is listed only while some client is registered for it (docs/threat-model.md T53, T68).
    public func metadata() async throws -> AuthorizationServerMetadata {
        let implicit = try await store.implicitClientExists()
        var metadata = AuthorizationServerMetadata(
            issuer: issuer,
            authorizationEndpoint: issuer + "/oauth2/authorize",
            tokenEndpoint: issuer + "/oauth2/token",
            userinfoEndpoint: issuer + "/userinfo",
            revocationEndpoint: issuer + "/oauth2/revoke",
            introspectionEndpoint: issuer + "/oauth2/introspect",
            scopesSupported: try await store.scopeCatalogue().map(\.name),
            responseTypesSupported: implicit ? ["code", "token"] : ["code"],
            grantTypesSupported: grants.grantTypes + (implicit ? ["implicit"] : []),
            tokenEndpointAuthMethodsSupported: ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"])
        metadata.tokenEndpointAuthSigningAlgValuesSupported = JWTAssertion.algorithms
        metadata.revocationEndpointAuthMethodsSupported = metadata.tokenEndpointAuthMethodsSupported
        metadata.introspectionEndpointAuthMethodsSupported = metadata.tokenEndpointAuthMethodsSupported
        metadata.revocationEndpointAuthSigningAlgValuesSupported = JWTAssertion.algorithms
        metadata.introspectionEndpointAuthSigningAlgValuesSupported = JWTAssertion.algorithms
        metadata.jwksURI = issuer + "/oauth2/jwks"
        metadata.endSessionEndpoint = issuer + "/oauth2/logout"
        metadata.subjectTypesSupported = ["public"]
        metadata.idTokenSigningAlgValuesSupported = SigningAlgorithm.allCases.map(\.rawValue)
        metadata.claimsSupported = Self.claimsSupported
        metadata.responseModesSupported = ["query", "fragment", ResponseMode.formPost.rawValue]
        if backChannelLogout != nil {
            metadata.backchannelLogoutSupported = true
            metadata.backchannelLogoutSessionSupported = true
        }
        // Which providers are trusted stays out of the metadata (draft §9.4).
        if grants.grantTypes.contains(GrantTypes.jwtBearer) {
            metadata.authorizationGrantProfilesSupported = [JWTBearerGrant.identityAssertionProfile]
        }
        metadata.promptValuesSupported = AuthorizationRequestValidator.promptValuesSupported(configuration).map(\.rawValue)
        metadata.acrValuesSupported = AuthenticationLevel.allCases.map(\.rawValue)
        metadata.claimsParameterSupported = false
        metadata.requestParameterSupported = false
        metadata.requestURIParameterSupported = false
        metadata.registrationEndpoint = registrationEndpoint
        metadata.clientIDMetadataDocumentSupported = acceptsClientMetadataDocuments
        metadata.pushedAuthorizationRequestEndpoint = issuer + "/oauth2/par"
        metadata.requirePushedAuthorizationRequests = configuration.requirePushedAuthorizationRequests
        metadata.deviceAuthorizationEndpoint = issuer + "/oauth2/device_authorization"
        metadata.dpopSigningAlgValuesSupported = DPoPProof.algorithms
        return metadata
    }

    /// Every claim an ID token or `/userinfo` may carry.
    static let claimsSupported = [
        "sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "amr", "acr", "name", "preferred_username",
        "updated_at", "email", "email_verified", "idp",
    ]

    /// Stores the audit events waiting in ``audit`` (a background task calls this every second).
    public func flushAuditEvents() async throws { try await audit.flush(to: store) }
}
