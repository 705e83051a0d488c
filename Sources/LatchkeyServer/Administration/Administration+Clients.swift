import Foundation
import LatchkeyCore

/// What an administrator sets on a client: the options of `latchkey clients create`, the fields
/// of the admin console's app form and the members of the admin API's app object, checked in
/// one place (``Administration/registerClient(_:)``, ``Administration/updateClient(id:_:)``).
public struct ClientSettings: Sendable, Equatable {
    /// `application_type`. Fixed once registered: a public client cannot become confidential.
    public var type: ClientType
    /// `client_name`: shown on the consent page.
    public var name: String
    /// `redirect_uris`, compared exactly (loopback: any port).
    public var redirectURIs: [String]
    /// `scope`: what the client may ask for; empty means `profile`.
    public var scopes: [String]
    /// `logo_uri` (https).
    public var logoURI: String?
    /// `consent_markdown`.
    public var consentMarkdown: String?
    /// `policy_uri` (https).
    public var privacyPolicyURI: String?
    /// `owner`: the username of the only user who may authorize it.
    public var ownerUsername: String?
    /// `grant_types` (RFC 7591 §2): what the client's kind always has
    /// (``GrantTypes/defaults(for:)``) and the grants it may be given besides: `implicit` for a
    /// browser client (`allow_implicit`), the device grant for a native or web app (`allow_device_code`).
    public var grantTypes: [String]
    /// `first_party`: skips the consent page.
    public var firstParty: Bool
    /// `access_token_lifetime` in seconds; `nil` for the server's default.
    public var accessTokenLifetime: Int?
    /// `refresh_token_lifetime` in seconds; `nil` for the server's default. Not for service clients.
    public var refreshTokenLifetime: Int?
    /// `id_token_signed_response_alg`: `RS256` (the default) or `ES256`.
    public var idTokenSigningAlgorithm: SigningAlgorithm
    /// `post_logout_redirect_uris`: where RP-initiated logout may return, compared exactly.
    public var postLogoutRedirectURIs: [String]
    /// `require_pushed_authorization_requests` (RFC 9126 §6): its authorization requests must be
    /// pushed to `/oauth2/par` first.
    public var requirePushedAuthorizationRequests: Bool
    /// `jwks` or `jwks_uri` (`token_endpoint_auth_method` `private_key_jwt`, RFC 7523 §2.2): the
    /// public keys a web or service client proves itself with instead of a secret. Fixed kind once
    /// registered: a client with a secret cannot switch to keys, nor back; the keys may change.
    public var keys: ClientKeys?
    /// `backchannel_logout_uri` (OpenID Connect Back-Channel Logout 1.0 §2.2): a web app's https
    /// URL where logout tokens are posted when a session it has a grant from ends.
    public var backchannelLogoutURI: String?

    public init(
        type: ClientType, name: String, redirectURIs: [String] = [], scopes: [String] = [], logoURI: String? = nil,
        consentMarkdown: String? = nil, privacyPolicyURI: String? = nil, ownerUsername: String? = nil,
        allowImplicit: Bool = false, firstParty: Bool = false, accessTokenLifetime: Int? = nil, refreshTokenLifetime: Int? = nil,
        idTokenSigningAlgorithm: SigningAlgorithm = .rs256, postLogoutRedirectURIs: [String] = [],
        requirePushedAuthorizationRequests: Bool = false, allowDeviceCode: Bool = false, grantTypes: [String]? = nil,
        keys: ClientKeys? = nil, allowTokenExchange: Bool = false, backchannelLogoutURI: String? = nil
    ) {
        self.keys = keys
        self.backchannelLogoutURI = backchannelLogoutURI
        self.grantTypes = GrantTypes.ordered(
            grantTypes ?? GrantRegistry.standard.defaultGrantTypes(for: type) + (allowImplicit ? [GrantTypes.implicit] : [])
                + (allowDeviceCode ? [GrantTypes.deviceCode] : []) + (allowTokenExchange ? [GrantTypes.tokenExchange] : []))
        self.requirePushedAuthorizationRequests = requirePushedAuthorizationRequests
        self.idTokenSigningAlgorithm = idTokenSigningAlgorithm
        self.postLogoutRedirectURIs = postLogoutRedirectURIs
        self.type = type
        self.name = name
        self.redirectURIs = redirectURIs
        self.scopes = scopes
        self.logoURI = logoURI
        self.consentMarkdown = consentMarkdown
        self.privacyPolicyURI = privacyPolicyURI
        self.ownerUsername = ownerUsername
        self.firstParty = firstParty
        self.accessTokenLifetime = accessTokenLifetime
        self.refreshTokenLifetime = refreshTokenLifetime
    }
}

/// What registering a client returns: the client and, for confidential ones, the secret, shown once.
public struct RegisteredClient: Sendable {
    public var client: Client
    /// The plain secret: stored only as a hash, so this is the one chance to see it.
    public var secret: String?
}

extension Administration {
    /// Registers a client after checking its redirect URIs, scopes and links.
    public func registerClient(_ settings: ClientSettings) async throws -> RegisteredClient {
        try await registerClient(settings, as: Client(id: ClientID(rawValue: ""), createdAt: now()))
    }

    /// Registers a client with the same checks, taking from `template` who registered it and,
    /// when set, its id (a metadata document's URL), registration access token and document expiry.
    public func registerClient(_ settings: ClientSettings, as template: Client) async throws -> RegisteredClient {
        // A client with keys has no secret: one way to authenticate, never two.
        let secret = settings.type.isConfidential && settings.keys == nil ? RandomToken.generate(.clientSecret) : nil
        var client = template
        // 16 alphanumerics: about 95 bits, never starting with "-" on a command line.
        if client.id.rawValue.isEmpty { client.id = ClientID(rawValue: RandomToken.alphanumeric(length: 16)) }
        client.type = settings.type
        client.secretHash = secret.map(RandomToken.hash)
        try await apply(settings, to: &client)
        try await store.insertClient(client)
        await event(
            .clientRegistered,
            [
                "client_id": "\(client.id)", "type": "\(settings.type.rawValue)",
                "registration": "\(client.registration.rawValue)",
            ])
        return RegisteredClient(client: client, secret: secret)
    }

    /// The same with one parameter a setting, as the CLI and the tests call it.
    public func registerClient(
        type: ClientType, name: String, redirectURIs: [String], scopes: [String], logoURI: String? = nil,
        consentMarkdown: String? = nil, privacyPolicyURI: String? = nil, ownerUsername: String? = nil,
        allowImplicit: Bool = false, firstParty: Bool = false, accessTokenLifetime: Int? = nil, refreshTokenLifetime: Int? = nil,
        idTokenSigningAlgorithm: SigningAlgorithm = .rs256, postLogoutRedirectURIs: [String] = [],
        requirePushedAuthorizationRequests: Bool = false, allowDeviceCode: Bool = false, grantTypes: [String]? = nil,
        keys: ClientKeys? = nil, backchannelLogoutURI: String? = nil
    ) async throws -> RegisteredClient {
        try await registerClient(
            ClientSettings(
                type: type, name: name, redirectURIs: redirectURIs, scopes: scopes, logoURI: logoURI,
                consentMarkdown: consentMarkdown, privacyPolicyURI: privacyPolicyURI, ownerUsername: ownerUsername,
                allowImplicit: allowImplicit, firstParty: firstParty, accessTokenLifetime: accessTokenLifetime,
                refreshTokenLifetime: refreshTokenLifetime, idTokenSigningAlgorithm: idTokenSigningAlgorithm,
                postLogoutRedirectURIs: postLogoutRedirectURIs,
                requirePushedAuthorizationRequests: requirePushedAuthorizationRequests, allowDeviceCode: allowDeviceCode,
                grantTypes: grantTypes, keys: keys, backchannelLogoutURI: backchannelLogoutURI))
    }

    /// Changes a client's settings, checked as at registration. Grants already made keep their
    /// scopes; new requests see the new settings at once.
    public func updateClient(id: String, _ settings: ClientSettings) async throws -> Client {
        guard var client = try await store.client(id: ClientID(rawValue: id)) else {
            throw AdministrationError("There is no client \(id).")
        }
        guard settings.type == client.type else {
            throw AdministrationError(
                "A client's type cannot change (its secret and grants depend on it); register a new client instead.",
                field: "application_type")
        }
        guard (settings.keys == nil) == (client.keys == nil) else {
            throw AdministrationError(
                client.keys == nil
                    ? "This client authenticates with a secret; register a new client to use private_key_jwt."
                    : "This client authenticates with keys (private_key_jwt); give it jwks or jwks_uri.",
                field: "token_endpoint_auth_method")
        }
        try await apply(settings, to: &client)
        guard try await store.updateClient(client) else { throw AdministrationError("There is no client \(id).") }
        await event(.clientUpdated, ["client_id": "\(client.id)"])
        return client
    }

    /// The settings, checked, the owner looked up, written onto `client`.
    private func apply(_ settings: ClientSettings, to client: inout Client) async throws {
        let type = settings.type
        if settings.allowImplicit, type != .browser {
            throw AdministrationError(
                "The implicit grant is only for browser clients; the others use the code flow.", field: "allow_implicit")
        }
        var ownerUserID: UserID?
        if let ownerUsername = settings.ownerUsername {
            guard type != .service else {
                throw AdministrationError("A service client acts for no user and has no owner.", field: "owner")
            }
            guard let owner = try await store.user(username: Username(rawValue: ownerUsername)) else {
                throw AdministrationError("There is no user named \(ownerUsername) to own the client.", field: "owner")
            }
            ownerUserID = owner.id
        }
        let name = settings.name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty, name.count <= 100 else {
            throw AdministrationError("The name must be 1 to 100 characters.", field: "client_name")
        }
        if type == .service, !settings.redirectURIs.isEmpty {
            throw AdministrationError(
                "A service client uses client credentials and has no redirect URIs.", field: "redirect_uris")
        }
        // A device-only app (a TV, a command-line tool) signs in through /device and needs none.
        guard type == .service || settings.allowDeviceCode || !settings.redirectURIs.isEmpty else {
            throw AdministrationError("A \(type.rawValue) client needs at least one redirect URI.", field: "redirect_uris")
        }
        for uri in settings.redirectURIs {
            if let problem = RedirectURI.registrationProblem(uri, policy: type == .native ? .native : .web) {
                throw AdministrationError("Redirect URI \(uri): \(problem).", field: "redirect_uris")
            }
            if type == .native, !acceptsLocalhostRedirects, RedirectURI.isLocalhost(uri) {
                throw AdministrationError(
                    "Redirect URI \(uri): this server takes no http://localhost redirect URIs "
                        + "(localhost-redirect-uris refuse); use http://127.0.0.1 (RFC 8252 §8.3).", field: "redirect_uris")
            }
        }
        let catalogue = try await store.scopeCatalogue().map(\.name)
        let scopes = settings.scopes.isEmpty ? ["profile"] : settings.scopes
        for scope in scopes where !catalogue.contains(scope) {
            throw AdministrationError(
                "The scope \(scope) is not in the catalogue. Add it first: latchkey scopes add \(scope) --description \"…\"",
                field: "scope")
        }
        // Only a service client's own token opens the admin API; a user asked to consent to it
        // would be asked for something that does nothing, on a page that reads like phishing.
        if type != .service, scopes.contains(adminAPIScope) {
            throw AdministrationError("\(adminAPIScope) is only for service clients (the admin API).", field: "scope")
        }
        for (field, link) in [("logo_uri", settings.logoURI), ("policy_uri", settings.privacyPolicyURI)] {
            if let link, !(link.hasPrefix("https://") && URL(string: link)?.host != nil) {
                throw AdministrationError(
                    "The \(field == "logo_uri" ? "logo" : "privacy policy") URL must be https.", field: field)
            }
        }
        if let seconds = settings.accessTokenLifetime, !(Self.accessTokenLifetimes ~= seconds) {
            throw AdministrationError(
                "The access token lifetime must be 60 seconds to 30 days (\(Self.accessTokenLifetimes.upperBound) seconds).",
                field: "access_token_lifetime")
        }
        if let seconds = settings.refreshTokenLifetime {
            guard type != .service else {
                throw AdministrationError("A service client gets no refresh token.", field: "refresh_token_lifetime")
            }
            guard Self.refreshTokenLifetimes ~= seconds else {
                throw AdministrationError(
                    "The refresh token lifetime must be 5 minutes to a year (\(Self.refreshTokenLifetimes.upperBound) seconds).",
                    field: "refresh_token_lifetime")
            }
        }
        if type == .service, !settings.postLogoutRedirectURIs.isEmpty {
            throw AdministrationError("A service client signs no one in and has no logout.", field: "post_logout_redirect_uris")
        }
        for uri in settings.postLogoutRedirectURIs {
            if let problem = RedirectURI.registrationProblem(uri, policy: type == .native ? .native : .web) {
                throw AdministrationError("Post-logout redirect URI \(uri): \(problem).", field: "post_logout_redirect_uris")
            }
        }
        if let uri = settings.backchannelLogoutURI, let problem = Self.backchannelLogoutProblem(uri, type: type) {
            throw AdministrationError(problem, field: "backchannel_logout_uri")
        }
        if type == .service, settings.requirePushedAuthorizationRequests {
            throw AdministrationError(
                "A service client makes no authorization requests to push.", field: "require_pushed_authorization_requests")
        }
        if settings.allowDeviceCode, type != .native, type != .web {
            throw AdministrationError(
                "Only native and web apps may use the device authorization grant.", field: "allow_device_code")
        }
        if let problem = GrantRegistry.standard.problem(settings.grantTypes, for: type) {
            throw AdministrationError(problem, field: "grant_types")
        }
        if let markdown = settings.consentMarkdown, markdown.utf8.count > 8192 {
            throw AdministrationError("The consent text must be at most 8 KiB.", field: "consent_markdown")
        }
        client.name = name
        client.redirectURIs = settings.redirectURIs
        client.scopes = ScopeSet(scopes)
        client.logoURI = settings.logoURI
        client.consentMarkdown = settings.consentMarkdown
        client.privacyPolicyURI = settings.privacyPolicyURI
        client.ownerUserID = ownerUserID
        client.grantTypes = settings.grantTypes
        client.firstParty = settings.firstParty
        client.accessTokenLifetime = settings.accessTokenLifetime
        client.refreshTokenLifetime = settings.refreshTokenLifetime
        client.idTokenSigningAlgorithm = settings.idTokenSigningAlgorithm
        client.postLogoutRedirectURIs = settings.postLogoutRedirectURIs
        client.requirePushedAuthorizationRequests = settings.requirePushedAuthorizationRequests
        client.keys = try Self.checked(settings.keys, type: type)
        client.backchannelLogoutURI = settings.backchannelLogoutURI
    }

    /// Why `uri` cannot be a `type` client's `backchannel_logout_uri`, or `nil`: only a web app
    /// (it has a server to receive it), an absolute `https` URL without a fragment or user
    /// information, of at most 2,048 characters. Where it points is checked when a logout is sent.
    static func backchannelLogoutProblem(_ uri: String, type: ClientType) -> String? {
        guard type == .web else { return "Only a web app has a server to receive back-channel logouts." }
        guard uri.utf8.count <= 2048, !uri.hasNUL, let url = URLComponents(string: uri), url.scheme == "https",
            let host = url.host, !host.isEmpty, url.fragment == nil, url.user == nil, url.password == nil
        else { return "The back-channel logout URI must be an https URL without a fragment: \(uri)" }
        return nil
    }

    /// A client's keys, checked: only for a confidential client; `jwks` a key set with at least
    /// one usable signing key and no private one; `jwks_uri` an https URL.
    static func checked(_ keys: ClientKeys?, type: ClientType) throws -> ClientKeys? {
        guard let keys else { return nil }
        guard type.isConfidential else {
            throw AdministrationError(
                "Only a web or service client authenticates with keys (private_key_jwt); a \(type.rawValue) client is public.",
                field: keys.jwks == nil ? "jwks_uri" : "jwks")
        }
        switch keys {
        case .jwks(let json):
            do { _ = try AssertionKeySet(json: Data(json.utf8)) } catch {
                throw AdministrationError("jwks: \(error.description)", field: "jwks")
            }
        case .jwksURI(let address):
            guard address.utf8.count <= 2048, let components = URLComponents(string: address), components.scheme == "https",
                let host = components.host, !host.isEmpty, components.user == nil, components.fragment == nil
            else {
                throw AdministrationError("jwks_uri must be an https URL (without user or fragment).", field: "jwks_uri")
            }
        }
        return keys
    }

    /// What a client's own lifetimes may be, in seconds.
    static let accessTokenLifetimes = 60...(30 * 86_400)
    static let refreshTokenLifetimes = 300...(365 * 86_400)

    /// Gives a confidential client a new secret, shown once; the old one stops working at once.
    public func rotateSecret(clientID: String) async throws -> String {
        guard let client = try await store.client(id: ClientID(rawValue: clientID)) else {
            throw AdministrationError("There is no client \(clientID).")
        }
        guard client.type.isConfidential else {
            throw AdministrationError("A \(client.type.rawValue) client is public and has no secret.")
        }
        guard client.keys == nil else {
            throw AdministrationError(
                "This client authenticates with keys (private_key_jwt) and has no secret; change its jwks or jwks_uri instead.")
        }
        let secret = RandomToken.generate(.clientSecret)
        guard try await store.setClientSecretHash(id: ClientID(rawValue: clientID), secretHash: RandomToken.hash(secret)) else {
            throw AdministrationError("There is no client \(clientID).")
        }
        await event(.clientSecretRotated, ["client_id": "\(clientID)"])
        return secret
    }

    /// Deletes a client with everything it was granted. - Returns: whether it existed.
    public func deleteClient(id: String) async throws -> Bool {
        guard try await store.deleteClient(id: ClientID(rawValue: id)) else { return false }
        await event(.clientDeleted, ["client_id": "\(id)"])
        return true
    }
}

extension ClientSettings {
    /// A registered client's settings, for an edit form or the API; `ownerUsername` is looked up
    /// by the caller.
    public init(_ client: Client, ownerUsername: String?) {
        self.init(
            type: client.type, name: client.name, redirectURIs: client.redirectURIs, scopes: client.scopes.names,
            logoURI: client.logoURI, consentMarkdown: client.consentMarkdown, privacyPolicyURI: client.privacyPolicyURI,
            ownerUsername: ownerUsername, firstParty: client.firstParty,
            accessTokenLifetime: client.accessTokenLifetime, refreshTokenLifetime: client.refreshTokenLifetime,
            idTokenSigningAlgorithm: client.idTokenSigningAlgorithm, postLogoutRedirectURIs: client.postLogoutRedirectURIs,
            requirePushedAuthorizationRequests: client.requirePushedAuthorizationRequests, grantTypes: client.grantTypes,
            keys: client.keys, backchannelLogoutURI: client.backchannelLogoutURI)
    }
}
