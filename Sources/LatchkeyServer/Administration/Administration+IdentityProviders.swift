import Foundation
import LatchkeyCore

/// What an administrator gives to add an upstream identity provider (`latchkey providers add`).
public struct IdentityProviderRegistration: Sendable {
    public var name: String
    public var displayName: String?
    public var kind: IdentityProviderKind = .openIDConnect
    public var issuer: String?
    public var clientID: String
    /// Latchkey's secret there, sealed before it is stored; `nil` for a public client.
    public var clientSecret: String?
    /// Empty for the default: `openid profile email` (OpenID Connect), none (OAuth 2.0).
    public var scope: [String] = []
    public var authorizationEndpoint: String?
    public var tokenEndpoint: String?
    public var userinfoEndpoint: String?
    public var claims = ClaimMapping()
    public var createsAccounts = true
    public var allowedEmailDomains: [String] = []
    public var linksVerifiedEmail = false
    public var updatesProfile = false
    /// Whether the token endpoint takes the provider's signed assertions about its users as a
    /// grant (RFC 7523 §2.1, identity assertion grants); an OpenID provider only.
    public var acceptsAssertions = false

    public init(name: String, issuer: String?, clientID: String) {
        self.name = name
        self.issuer = issuer
        self.clientID = clientID
    }
}

extension Administration {
    /// Adds an upstream identity provider, its client secret sealed with `keyEncryptionKey`
    /// (bound to its name). The caller checks that an OpenID provider's discovery works.
    public func addIdentityProvider(_ registration: IdentityProviderRegistration, keyEncryptionKey: KeyEncryptionKey)
        async throws -> IdentityProvider
    {
        let name = registration.name
        guard Federation.isValidName(name) else {
            throw AdministrationError("A provider's name is 1 to 32 of a-z, 0-9 and -, not starting with -.", field: "name")
        }
        guard !registration.clientID.isEmpty, !registration.clientID.hasNUL else {
            throw AdministrationError("The client id is missing.", field: "client_id")
        }
        for (field, url) in [
            ("issuer", registration.issuer), ("authorization_endpoint", registration.authorizationEndpoint),
            ("token_endpoint", registration.tokenEndpoint), ("userinfo_endpoint", registration.userinfoEndpoint),
        ] {
            if let url, !Self.isProviderURL(url) {
                throw AdministrationError("\(field) must be an https URL (http only on loopback): \(url)", field: field)
            }
        }
        var scope = ScopeSet(registration.scope)
        switch registration.kind {
        case .openIDConnect:
            guard registration.issuer != nil else {
                throw AdministrationError("An OpenID provider needs --issuer.", field: "issuer")
            }
            if scope.isEmpty { scope = ScopeSet(["openid", "profile", "email"]) }
            guard scope.contains("openid") else {
                throw AdministrationError("An OpenID provider's scope must hold openid.", field: "scope")
            }
        case .oauth2:
            guard registration.authorizationEndpoint != nil, registration.tokenEndpoint != nil,
                registration.userinfoEndpoint != nil
            else {
                throw AdministrationError(
                    "A plain OAuth 2.0 provider needs its authorization, token and userinfo endpoints.",
                    field: "authorization_endpoint")
            }
        }
        if registration.acceptsAssertions, registration.kind != .openIDConnect {
            throw AdministrationError(Self.assertionsNeedOpenID, field: "accepts_assertions")
        }
        let sealed = try registration.clientSecret.map {
            try keyEncryptionKey.seal(Data($0.utf8), kid: UpstreamClients.secretBinding(name))
        }
        let provider = IdentityProvider(
            name: name, displayName: registration.displayName.flatMap { $0.isEmpty ? nil : $0 } ?? name,
            kind: registration.kind, issuer: registration.issuer, clientID: registration.clientID,
            sealedClientSecret: sealed, scope: scope, authorizationEndpoint: registration.authorizationEndpoint,
            tokenEndpoint: registration.tokenEndpoint, userinfoEndpoint: registration.userinfoEndpoint,
            claims: registration.claims, createsAccounts: registration.createsAccounts,
            allowedEmailDomains: registration.allowedEmailDomains.map { $0.lowercased() },
            linksVerifiedEmail: registration.linksVerifiedEmail, updatesProfile: registration.updatesProfile, createdAt: now(),
            acceptsAssertions: registration.acceptsAssertions)
        do {
            try await store.insertIdentityProvider(provider)
        } catch StoreError.conflict {
            throw AdministrationError("A provider named \(name) exists already.", field: "name")
        }
        await event(.identityProviderAdded, ["identity_provider": "\(name)"])
        return provider
    }

    /// Turns a provider on or off; off ends the sessions signed in through it.
    public func setIdentityProviderEnabled(name: String, _ enabled: Bool) async throws {
        guard try await store.setIdentityProviderEnabled(name: name, enabled) else {
            throw AdministrationError("There is no provider named \(name).")
        }
        await event(.identityProviderUpdated, ["identity_provider": "\(name)", "enabled": "\(enabled)"])
    }

    /// Turns on or off whether the token endpoint accepts the provider's assertions about its users.
    public func setIdentityProviderAcceptsAssertions(name: String, _ accepts: Bool) async throws {
        guard let provider = try await store.identityProvider(name: name) else {
            throw AdministrationError("There is no provider named \(name).")
        }
        if accepts, provider.kind != .openIDConnect {
            throw AdministrationError(Self.assertionsNeedOpenID, field: "accepts_assertions")
        }
        guard try await store.setIdentityProviderAcceptsAssertions(name: name, accepts) else {
            throw AdministrationError("There is no provider named \(name).")
        }
        await event(.identityProviderUpdated, ["identity_provider": "\(name)", "accepts_assertions": "\(accepts)"])
    }

    static let assertionsNeedOpenID =
        "Only an OpenID provider's assertions are accepted: its keys come from its discovery document."

    /// Deletes a provider, its links and the sessions signed in through it.
    public func deleteIdentityProvider(name: String) async throws {
        guard try await store.deleteIdentityProvider(name: name) else {
            throw AdministrationError("There is no provider named \(name).")
        }
        await event(.identityProviderDeleted, ["identity_provider": "\(name)"])
    }

    /// An https URL, or http to a loopback address (a provider on this machine, as in tests).
    static func isProviderURL(_ text: String) -> Bool {
        guard let url = URLComponents(string: text), let host = url.host, !host.isEmpty, url.user == nil else { return false }
        switch url.scheme?.lowercased() {
        case "https": return true
        case "http": return host == "localhost" || host == "127.0.0.1" || host == "[::1]" || host == "::1"
        default: return false
        }
    }
}
