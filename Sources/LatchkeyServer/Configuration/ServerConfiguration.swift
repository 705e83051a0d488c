import Foundation

/// How an authorization server behaves. Defaults follow docs/design.md §6 and docs/threat-model.md's decisions.
public struct ServerConfiguration: Sendable {
    /// The issuer identifier (RFC 8414 §2): an `http(s)` URL with no query or fragment, no trailing slash.
    public var issuer: String
    /// Authorization code lifetime (RFC 6749 §4.1.2 recommends at most 10 minutes).
    public var codeLifetime: TimeInterval = 60
    /// Access token lifetime; `expires_in` in the token response.
    public var accessTokenLifetime: TimeInterval = 28_800
    /// Refresh token lifetime, renewed at each rotation (sliding).
    public var refreshTokenLifetime: TimeInterval = 30 * 86_400
    /// How long a just-rotated refresh token may be presented again, by the same client, while its
    /// successor is unused (docs/threat-model.md decision 3). Zero makes rotation strict.
    public var refreshGracePeriod: TimeInterval = 60
    /// How long an ID token is valid (`exp` − `iat`); a replaced signing key stays published this long.
    public var idTokenLifetime: TimeInterval = 3_600
    /// How long a browser session lasts at most, however active (absolute lifetime).
    public var sessionLifetime: TimeInterval = 12 * 3_600
    /// A browser session unused for this long ends (idle timeout).
    public var sessionIdleTimeout: TimeInterval = 30 * 60
    /// Failed sign-ins allowed per account in one ``signInWindow``, then that account's sign-in is
    /// refused (even with the right password) until the window ends.
    public var signInAttemptsPerAccount = 10
    /// Failed sign-ins allowed from one client address in one ``signInWindow``.
    public var signInAttemptsPerAddress = 100
    /// The throttling window for sign-in, counted from the first failure.
    public var signInWindow: TimeInterval = 15 * 60
    /// Failed authentications allowed per client id in one ``clientAuthenticationWindow`` at the
    /// token, revocation and introspection endpoints (docs/threat-model.md T41).
    public var clientAuthenticationAttempts = 20
    /// The throttling window for client authentication, counted from the first failure.
    public var clientAuthenticationWindow: TimeInterval = 60
    /// How long a user has to sign in and consent.
    public var pendingRequestLifetime: TimeInterval = 10 * 60
    /// How long a pushed authorization request's `request_uri` works (RFC 9126 §2.2: short, since
    /// the browser is sent at once).
    public var pushedRequestLifetime: TimeInterval = 60
    /// Pushed requests one client may make in a minute (docs/threat-model.md RV19): a public
    /// client's id is no secret, so without a limit anyone could fill the store with pushes.
    public var pushedRequestsPerClient = 600
    /// Refuse authorization requests that were not pushed first, from every client (RFC 9126 §5);
    /// off, only clients registered with `require_pushed_authorization_requests` must push.
    public var requirePushedAuthorizationRequests = false
    /// How long after its `iat` a DPoP proof is accepted (RFC 9449 §11.1); it may also be up to a
    /// minute ahead of this server's clock.
    public var dpopProofLifetime: TimeInterval = 120
    /// Require server nonces in DPoP proofs (RFC 9449 §8, §9): a proof without a good one is
    /// answered `use_dpop_nonce` with a nonce to use.
    public var requireDPoPNonce = false
    /// How long a DPoP nonce stays good; each instance hands out a new one every half of it.
    public var dpopNonceLifetime: TimeInterval = 600
    /// How long a device code and its user code work (RFC 8628 §3.2 `expires_in`).
    public var deviceCodeLifetime: TimeInterval = 10 * 60
    /// The seconds a device waits between polls at first (RFC 8628 §3.2 `interval`).
    public var devicePollInterval = 5
    /// User codes that may be entered from one client address in one ``signInWindow`` at `/device`,
    /// right or wrong (each is counted before it is looked up, so parallel guesses cannot race past).
    public var userCodeAttemptsPerAddress = 20
    /// Wrong user codes allowed from everyone together in one ``signInWindow``: with 20⁸ codes,
    /// this bounds a distributed guesser's odds whatever its number of addresses (RFC 8628 §5.1).
    public var userCodeAttemptsOverall = 1_000
    /// Require PKCE from confidential clients too (docs/threat-model.md decision 7; off by default, since RFC 6749 lets a confidential client use the code flow without it).
    public var requirePKCEForConfidentialClients = false
    /// Whether any signed-in user may register personal apps in the admin console (and see and
    /// edit only those); off, only administrators use the console.
    public var selfServiceApps = false
    /// The fewest characters a new password may have (``PasswordPolicy``), 8 or more.
    public var passwordMinimumLength = 8
    /// Where e-mail goes, as the console's E-mail page names it (the relay, never its password,
    /// and the sender); `nil` when `smtp-url` is not set and nothing is sent.
    public var mailDelivery: String?
    /// An admin-console page after this long without use asks for sign-in again, however long the
    /// session would otherwise last (shorter than ``sessionIdleTimeout``).
    public var adminSessionIdleTimeout: TimeInterval = 15 * 60
    /// Changing a role, rotating a secret, resetting a password or deleting anything in the
    /// console needs the password entered within this long.
    public var adminReauthenticationWindow: TimeInterval = 10 * 60
    /// How long the Activity page's audit events are kept in the store.
    public var activityRetention: TimeInterval = 30 * 86_400
    /// Whether native apps may register `http://localhost` redirect URIs, matched on any port as
    /// loopback IP literals are (`localhost-redirect-uris accept`, the default; RFC 8252 §7.3, §8.3).
    public var acceptsLocalhostRedirects = true
    /// Who may create an account at `/signup`, and what a new account must prove.
    public var signUp = SignUpPolicy()
    /// Whether people may sign in with a password (`password-sign-in on`, the default). Off, they
    /// sign in through upstream identity providers or with passkeys only, and nothing asks for a
    /// password: a recent sign-in confirms changes instead.
    public var passwordSignIn = true
    /// Who must sign in with a second factor (`--require-second-factor`): besides them, every
    /// account that set one up uses it, and a user an administrator marked.
    public var requireSecondFactor = SecondFactorPolicy.off
    /// Dynamic client registration (RFC 7591): off, open to native clients, or by initial access token.
    public var dynamicRegistration = DynamicRegistrationPolicy()
    /// Client ID Metadata Documents: whether an `https` URL may be a `client_id`, and from where.
    public var clientMetadataDocuments = ClientMetadataDocumentPolicy()
    /// The reverse proxies (CIDR ranges) whose `X-Forwarded-For` names the client, for throttling
    /// and the audit log; empty, the peer's own address counts.
    public var trustedProxies: [String] = []
    /// Whether `latchkey_tokens_issued_total` carries a `client_id` label: one series per client
    /// that gets tokens, so off by default (see ``EventMetrics``).
    public var metricsClientLabels = false
    /// The clock. Tests inject one to move time without sleeping.
    public var now: @Sendable () -> Date = { Date() }

    public init(issuer: String) {
        self.issuer = issuer
    }

    /// Why `issuer` cannot be an issuer identifier, or `nil` when it can.
    public static func issuerProblem(_ issuer: String) -> String? {
        guard let url = URL(string: issuer), let scheme = url.scheme, ["http", "https"].contains(scheme),
            url.host != nil
        else { return "the issuer must be an http or https URL, such as https://auth.example.com" }
        if url.query != nil || url.fragment != nil || issuer.hasSuffix("/") {
            return "the issuer must have no query, fragment or trailing slash (RFC 8414 §2)"
        }
        return nil
    }

    /// Whether cookies must be `Secure`: the issuer is https.
    public var usesHTTPS: Bool { issuer.hasPrefix("https://") }
}

extension ServerConfiguration {
    /// Whether `user` confirms who they are with their password: passwords are on here and the
    /// account has one (one made by an upstream provider has none).
    public func usesPassword(_ user: User) -> Bool { passwordSignIn && user.hasPassword }
}
