import Foundation
import LatchkeyCore

/// The kinds of upstream identity provider.
public enum IdentityProviderKind: String, Sendable, CaseIterable {
    /// An OpenID provider: its endpoints and keys from discovery, who signed in from its ID token
    /// (OpenID Connect Core §3.1.3.7), topped up from its userinfo endpoint.
    case openIDConnect = "oidc"
    /// A plain OAuth 2.0 provider (GitHub's shape): explicit endpoints, and who signed in from
    /// its userinfo endpoint through ``IdentityProvider/claims``.
    case oauth2
}

/// Which members of a provider's userinfo answer (or ID token) say who signed in.
public struct ClaimMapping: Sendable, Equatable {
    /// The stable identifier (`sub`; GitHub's `id`, a number).
    public var subject = "sub"
    public var email = "email"
    /// `email_verified`; a provider without it never vouches for an address.
    public var emailVerified = "email_verified"
    public var name = "name"
    /// The name a new account here is given (`preferred_username`; GitHub's `login`).
    public var username = "preferred_username"

    public init() {}
}

/// An upstream identity provider people may sign in through, configured by an administrator
/// (docs/accounts.md, "Upstream identity providers"). Nothing here comes from a user.
public struct IdentityProvider: Sendable, Equatable {
    /// Its name here: 1 to 32 of `a-z 0-9 -`, in its paths (`/federation/NAME/callback`), in
    /// `idp_hint` and in ID tokens' `idp`.
    public var name: String
    /// What the sign-in page calls it ("Continue with …").
    public var displayName: String
    public var kind: IdentityProviderKind
    /// Its issuer identifier: discovery for OpenID Connect, and what an `iss` in its answers must be.
    public var issuer: String?
    /// Latchkey's `client_id` there.
    public var clientID: String
    /// Latchkey's client secret there, sealed with the key-encryption key (bound to the
    /// provider's name); `nil` for a public client (PKCE alone).
    public var sealedClientSecret: String?
    /// What Latchkey asks it for.
    public var scope: ScopeSet
    /// Endpoints of a plain OAuth 2.0 provider; an OpenID provider's come from discovery.
    public var authorizationEndpoint: String?
    public var tokenEndpoint: String?
    public var userinfoEndpoint: String?
    public var claims: ClaimMapping
    /// Whether a first sign-in through it creates an account here.
    public var createsAccounts: Bool
    /// When not empty, accounts are created only for addresses the provider verified in these domains.
    public var allowedEmailDomains: [String]
    /// Whether a first sign-in links to the account here with the same confirmed address, when
    /// the provider says it verified it (`email_verified`).
    public var linksVerifiedEmail: Bool
    /// Whether the name and address here follow the provider's at every sign-in.
    public var updatesProfile: Bool
    public var enabled: Bool
    public var createdAt: Date
    /// Whether the token endpoint takes this provider's signed assertions about its users as a
    /// grant (`urn:ietf:params:oauth:grant-type:jwt-bearer`, RFC 7523 §2.1, and identity assertion
    /// grants, `oauth-id-jag+jwt`): an OpenID provider only, its keys from its discovery document.
    public var acceptsAssertions: Bool

    public init(
        name: String, displayName: String, kind: IdentityProviderKind, issuer: String?, clientID: String,
        sealedClientSecret: String?, scope: ScopeSet, authorizationEndpoint: String? = nil, tokenEndpoint: String? = nil,
        userinfoEndpoint: String? = nil, claims: ClaimMapping = ClaimMapping(), createsAccounts: Bool = true,
        allowedEmailDomains: [String] = [], linksVerifiedEmail: Bool = false, updatesProfile: Bool = false,
        enabled: Bool = true, createdAt: Date, acceptsAssertions: Bool = false
    ) {
        self.acceptsAssertions = acceptsAssertions
        self.name = name
        self.displayName = displayName
        self.kind = kind
        self.issuer = issuer
        self.clientID = clientID
        self.sealedClientSecret = sealedClientSecret
        self.scope = scope
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.userinfoEndpoint = userinfoEndpoint
        self.claims = claims
        self.createsAccounts = createsAccounts
        self.allowedEmailDomains = allowedEmailDomains
        self.linksVerifiedEmail = linksVerifiedEmail
        self.updatesProfile = updatesProfile
        self.enabled = enabled
        self.createdAt = createdAt
    }
}

/// An account here linked to an account at an upstream provider.
public struct FederatedIdentity: Sendable, Equatable {
    /// The provider's name here.
    public var provider: String
    /// Who the person is there (`sub`).
    public var subject: String
    public var userID: UserID
    /// The address the provider gave when the link was made, to show on the account page.
    public var email: String?
    public var createdAt: Date
    public var lastUsedAt: Date?

    public init(provider: String, subject: String, userID: UserID, email: String?, createdAt: Date, lastUsedAt: Date? = nil) {
        self.provider = provider
        self.subject = subject
        self.userID = userID
        self.email = email
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}

/// One round trip to an upstream provider under way: kept from the redirect there to the
/// callback, found by the SHA-256 of its `state`, bound to the browser session that started it
/// and to one provider, and taken once (docs/threat-model.md FD1–FD3).
public struct FederationRequest: Sendable, Equatable {
    public var stateHash: FederationStateHash
    public var sessionIDHash: SessionIDHash
    public var provider: String
    /// The OpenID Connect `nonce` sent (not a secret: it comes back in the ID token).
    public var nonce: String?
    /// The PKCE code verifier, sealed with the key-encryption key (bound to the state's hash).
    public var sealedCodeVerifier: String
    /// The authorization request of an app the sign-in is for, if any.
    public var pendingID: String?
    /// The console page to go back to, if the sign-in came from there.
    public var next: String?
    /// Set when a signed-in user links the provider to their account, instead of signing in.
    public var linkingUserID: UserID?
    /// Set when the sign-in must be a fresh one (`prompt=login`, the console's re-authentication):
    /// the provider's `auth_time` must not be older.
    public var authenticatedAfter: Date?
    public var expiresAt: Date

    public init(
        stateHash: FederationStateHash, sessionIDHash: SessionIDHash, provider: String, nonce: String?,
        sealedCodeVerifier: String, pendingID: String?, next: String?, linkingUserID: UserID?,
        authenticatedAfter: Date? = nil, expiresAt: Date
    ) {
        self.authenticatedAfter = authenticatedAfter
        self.stateHash = stateHash
        self.sessionIDHash = sessionIDHash
        self.provider = provider
        self.nonce = nonce
        self.sealedCodeVerifier = sealedCodeVerifier
        self.pendingID = pendingID
        self.next = next
        self.linkingUserID = linkingUserID
        self.expiresAt = expiresAt
    }
}

/// Upstream identity providers, the accounts linked to them, and the round trips under way.
public protocol FederationStore: Sendable {
    /// Every provider, by name.
    func identityProviders() async throws -> [IdentityProvider]
    func identityProvider(name: String) async throws -> IdentityProvider?
    /// - Throws: ``StoreError/conflict(_:)`` when a provider of that name exists.
    func insertIdentityProvider(_ provider: IdentityProvider) async throws
    /// Turns a provider on or off; off ends the sessions signed in through it.
    /// - Returns: whether there was such a provider.
    func setIdentityProviderEnabled(name: String, _ enabled: Bool) async throws -> Bool
    /// Turns on or off whether the token endpoint accepts the provider's assertions.
    /// - Returns: whether there was such a provider.
    func setIdentityProviderAcceptsAssertions(name: String, _ accepts: Bool) async throws -> Bool
    /// Deletes a provider with its links, its round trips under way and the sessions signed in
    /// through it.
    func deleteIdentityProvider(name: String) async throws -> Bool
    func federatedIdentity(provider: String, subject: String) async throws -> FederatedIdentity?
    /// The account's links, oldest first.
    func federatedIdentities(userID: UserID) async throws -> [FederatedIdentity]
    /// Links an account; of two links of one upstream account at once, one is made.
    /// - Returns: `false` when that upstream account is linked already (to any account).
    func insertFederatedIdentity(_ identity: FederatedIdentity) async throws -> Bool
    /// Creates `user` with its first link, in one transaction.
    /// - Returns: `false` when the upstream account was linked meanwhile (nothing is created).
    func insertFederatedUser(_ user: User, identity: FederatedIdentity) async throws -> Bool
    func touchFederatedIdentity(provider: String, subject: String, at: Date) async throws
    /// - Returns: whether the account had that link.
    func deleteFederatedIdentity(provider: String, userID: UserID) async throws -> Bool
    func insertFederationRequest(_ request: FederationRequest) async throws
    /// Takes (deletes) the round trip if this browser session started it, for this provider, and
    /// it has not expired: one `DELETE … RETURNING`, so a callback works once.
    func takeFederationRequest(stateHash: FederationStateHash, sessionIDHash: SessionIDHash, provider: String, at: Date)
        async throws -> FederationRequest?
}
