import Foundation
import LatchkeyCore

/// An answer of the registration endpoints (RFC 7591, RFC 7592): a status, a JSON body (none for
/// 204), a `WWW-Authenticate` challenge for 401, and `Retry-After` for 429.
public struct RegistrationResponse: Sendable, Equatable {
    public var status: Int
    public var json: String?
    public var wwwAuthenticate: String?
    public var retryAfter: Int?

    init(_ status: Int, _ object: [String: Any]?, wwwAuthenticate: String? = nil, retryAfter: Int? = nil) {
        self.status = status
        json = object.map(AdminAPIResponse.encode)
        self.wwwAuthenticate = wwwAuthenticate
        self.retryAfter = retryAfter
    }

    /// An error body; the description is made to fit RFC 6749's character set, as every error's is.
    static func error(_ status: Int, _ code: OAuthError.Code, _ description: String) -> RegistrationResponse {
        let error = OAuthError(code, description)
        return RegistrationResponse(status, ["error": code.rawValue, "error_description": error.errorDescription ?? ""])
    }

    /// RFC 7591 §3.2.2: `invalid_redirect_uri` when the redirect URIs are at fault, else `invalid_client_metadata`.
    static func invalid(_ error: AdministrationError) -> RegistrationResponse {
        .error(
            400, error.field == "redirect_uris" ? .invalidRedirectURI : .invalidClientMetadata, error.description)
    }

    /// 401 with RFC 6750's challenge: the initial or registration access token is missing or wrong.
    static let invalidToken = RegistrationResponse(
        401, ["error": "invalid_token", "error_description": "The access token is missing, expired or not this client's."],
        wwwAuthenticate: #"Bearer error="invalid_token""#)
}

extension AuthorizationServer {
    /// `registration_endpoint`, when registration is on.
    public var registrationEndpoint: String? {
        configuration.dynamicRegistration.mode == .off ? nil : issuer + "/oauth2/register"
    }
}

/// Dynamic client registration (RFC 7591) and its management protocol (RFC 7592): reads initial
/// access tokens, counts registrations, and registers, updates and deletes clients through the
/// administration, with the checks every registration passes.
public struct ClientRegistrationEndpoint: Sendable, ServerContextual {
    let clients: any ClientStore
    let users: any UserStore
    let resources: any ResourceStore
    let registrations: any RegistrationStore
    let throttles: any ThrottleStore
    let administration: Administration
    let context: ServerContext

    /// `POST /oauth2/register`: registers a client and answers 201 with its metadata, its
    /// `registration_access_token` and `registration_client_uri`, and for a web app its secret.
    public func register(_ body: [UInt8], authorization: String?, clientAddress: String) async throws -> RegistrationResponse {
        let policy = configuration.dynamicRegistration
        switch policy.mode {
        case .off:
            return .error(403, .accessDenied, "Dynamic client registration is off on this server; ask its administrator.")
        case .initialAccessToken:
            guard let token = HeaderText.credentials(authorization ?? "", scheme: "Bearer").map(String.init),
                let record = try await registrations.initialAccessToken(hash: RandomToken.hash(token)), record.expiresAt > now
            else { return .invalidToken }
        case .open:
            break
        }
        // Every registration counts against the address block and against everyone, counted
        // before it is decided, so neither a script nor a burst of simultaneous requests can fill
        // the store (docs/threat-model.md RG2, RV14).
        for (key, limit, who) in [
            ("registration:" + ClientAddressBlock.of(clientAddress), policy.registrationsPerAddress, "this address"),
            ("registration:all", policy.registrationsOverall, "everyone"),
        ] {
            let window = try await throttles.recordFailure(key: ThrottleKey(rawValue: key), at: now, window: policy.window)
            if window.failures > limit {
                var refusal = RegistrationResponse.error(429, .invalidRequest, "Too many registrations from \(who).")
                refusal.retryAfter = window.secondsLeft(at: now)
                return refusal
            }
        }
        do {
            let request = try RegistrationRequest(body)
            let settings = try request.settings(
                openRegistration: policy.mode == .open, defaultScopes: try await resources.defaultRegistrationScopes())
            let token = RandomToken.generate(.registrationAccessToken)
            var template = Client(id: ClientID(rawValue: ""), registration: .dynamic, createdAt: now)
            template.registrationAccessTokenHash = RandomToken.hash(token)
            let registered = try await administration.acting(asRegistrantFrom: clientAddress).registerClient(
                settings, as: template)
            var object = registrationObject(registered.client)
            object["registration_access_token"] = token
            if let secret = registered.secret {
                object["client_secret"] = secret
                object["client_secret_expires_at"] = 0
            }
            return RegistrationResponse(201, object)
        } catch let error as AdministrationError {
            return .invalid(error)
        }
    }

    /// `GET /oauth2/register/{client_id}` (RFC 7592 §2.1).
    public func readRegistration(clientID: String, authorization: String?) async throws -> RegistrationResponse {
        guard let client = try await registeredClient(clientID, authorization: authorization) else { return .invalidToken }
        return RegistrationResponse(200, registrationObject(client))
    }

    /// `PUT /oauth2/register/{client_id}` (RFC 7592 §2.2): replaces the metadata, checked as at
    /// registration; the client's type cannot change.
    public func updateRegistration(clientID: String, _ body: [UInt8], authorization: String?) async throws
        -> RegistrationResponse
    {
        guard let client = try await registeredClient(clientID, authorization: authorization) else { return .invalidToken }
        do {
            let request = try RegistrationRequest(body)
            guard request.clientID == clientID else {
                throw AdministrationError("client_id must be the client's own.", field: "client_id")
            }
            let forbidden = [
                "registration_access_token", "registration_client_uri", "client_secret_expires_at", "client_id_issued_at",
            ]
            if let member = forbidden.first(where: request.members.contains) {
                throw AdministrationError("An update must not send \(member) (RFC 7592 §2.2).", field: member)
            }
            if let secret = request.clientSecret {
                guard let hash = client.secretHash, ConstantTime.equals(RandomToken.hash(secret), hash) else {
                    throw AdministrationError("client_secret is not the client's secret.", field: "client_secret")
                }
            }
            // An app whose redirects all stay on the device (as open registration made it) keeps to
            // that: an update cannot widen it to web redirects, whatever the policy is now.
            let staysOnDevice =
                client.secretHash == nil && client.keys == nil
                && (client.redirectURIs + client.postLogoutRedirectURIs).allSatisfy(RegistrationRequest.staysOnDevice)
            let asked = try request.settings(openRegistration: staysOnDevice, defaultScopes: client.scopes.names)
            // What only an administrator sets (owner, first-party, consent text, lifetimes) stays.
            let owner = try await client.ownerUserID.asyncFlatMap { try await users.user(id: $0)?.username.rawValue }
            var settings = ClientSettings(client, ownerUsername: owner)
            guard asked.type == settings.type else {
                throw AdministrationError("A registered app's type cannot change.", field: "token_endpoint_auth_method")
            }
            settings.name = asked.name
            settings.redirectURIs = asked.redirectURIs
            settings.scopes = asked.scopes
            settings.logoURI = asked.logoURI
            settings.privacyPolicyURI = asked.privacyPolicyURI
            settings.idTokenSigningAlgorithm = asked.idTokenSigningAlgorithm
            settings.postLogoutRedirectURIs = asked.postLogoutRedirectURIs
            // An app may start pushing its requests; once required (by it or an administrator),
            // an update does not turn it off.
            settings.requirePushedAuthorizationRequests =
                settings.requirePushedAuthorizationRequests || asked.requirePushedAuthorizationRequests
            settings.grantTypes = asked.grantTypes
            // A client with keys may replace them (rotation); one with a secret cannot take keys.
            settings.keys = asked.keys
            settings.backchannelLogoutURI = asked.backchannelLogoutURI
            // An administrator's trust was given to the app as it was: where its codes and users
            // go, and what it may ask. An update that moves a redirect or widens the scope drops
            // it, and the consent page comes back (docs/threat-model.md RV8).
            let moved =
                !Set(asked.redirectURIs).isSubset(of: client.redirectURIs)
                || !Set(asked.postLogoutRedirectURIs).isSubset(of: client.postLogoutRedirectURIs)
                || !Set(asked.scopes).isSubset(of: client.scopes.names)
            if moved { settings.firstParty = false }
            let updated = try await administration.acting(as: client).updateClient(id: clientID, settings)
            return RegistrationResponse(200, registrationObject(updated))
        } catch let error as AdministrationError {
            return .invalid(error)
        }
    }

    /// `DELETE /oauth2/register/{client_id}` (RFC 7592 §2.3): the client and everything it was granted go.
    public func deleteRegistration(clientID: String, authorization: String?) async throws -> RegistrationResponse {
        guard let client = try await registeredClient(clientID, authorization: authorization) else { return .invalidToken }
        _ = try await administration.acting(as: client).deleteClient(id: client.id.rawValue)
        return RegistrationResponse(204, nil)
    }

    /// The dynamically registered client `clientID`, when `authorization` carries its registration
    /// access token (compared in constant time); `nil` alike for an unknown client and a wrong token.
    private func registeredClient(_ clientID: String, authorization: String?) async throws -> Client? {
        guard let token = HeaderText.credentials(authorization ?? "", scheme: "Bearer").map(String.init),
            let client = try await clients.client(id: ClientID(rawValue: clientID)),
            client.registration == .dynamic, let hash = client.registrationAccessTokenHash,
            ConstantTime.equals(RandomToken.hash(token), hash)
        else { return nil }
        return client
    }

    /// The client's registered metadata in RFC 7591 §2 member names, with `registration_client_uri`.
    func registrationObject(_ client: Client) -> [String: Any] {
        var object: [String: Any] = [
            "client_id": client.id.rawValue, "client_id_issued_at": Int(client.createdAt.timeIntervalSince1970),
            "client_name": client.name, "redirect_uris": client.redirectURIs, "scope": client.scopes.description,
            "grant_types": client.grantTypes,
            "response_types": ["code"],
            "token_endpoint_auth_method": client.tokenEndpointAuthMethod,
            "application_type": client.type == .native ? "native" : "web",
            "id_token_signed_response_alg": client.idTokenSigningAlgorithm.rawValue,
            "post_logout_redirect_uris": client.postLogoutRedirectURIs,
            "require_pushed_authorization_requests": client.requirePushedAuthorizationRequests,
            "registration_client_uri": context.issuer + "/oauth2/register/" + client.id.rawValue,
        ]
        if let jwksURI = client.keys?.jwksURI { object["jwks_uri"] = jwksURI }
        if let uri = client.backchannelLogoutURI { object["backchannel_logout_uri"] = uri }
        if let jwks = client.keys?.jwks, let set = try? JSONSerialization.jsonObject(with: Data(jwks.utf8)) {
            object["jwks"] = set
        }
        if let logo = client.logoURI { object["logo_uri"] = logo }
        if let policy = client.privacyPolicyURI { object["policy_uri"] = policy }
        return object
    }
}
