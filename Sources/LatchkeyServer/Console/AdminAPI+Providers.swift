import Foundation
import LatchkeyCore

/// The admin API's upstream identity providers (`/admin/api/providers`): what `latchkey
/// providers` does, as JSON. A provider object has the names `latchkey providers show --json`
/// prints; the client secret is written (`client_secret`) and never read back (`confidential`
/// says whether there is one). An OpenID provider's discovery document is fetched at its first
/// use, not here (the CLI checks it at once).
extension Console {
    public func apiProviders() async throws -> AdminAPIResponse {
        AdminAPIResponse(200, ["providers": try await identityProviders().map(providerObject)])
    }

    public func apiProvider(name: String) async throws -> AdminAPIResponse {
        guard let provider = try await identityProvider(name: name) else { return .notFound("provider \(name)") }
        return AdminAPIResponse(200, providerObject(provider))
    }

    /// `POST /admin/api/providers`: 201 with the provider.
    public func apiAddProvider(_ body: [UInt8], by caller: Client) async throws -> AdminAPIResponse {
        do {
            let input = try Self.decode(ProviderInput.self, body)
            var registration = IdentityProviderRegistration(
                name: input.name ?? "", issuer: input.issuer, clientID: input.clientID ?? "")
            if let kind = input.kind {
                guard let known = IdentityProviderKind(rawValue: kind) else {
                    throw AdministrationError("kind must be oidc or oauth2.", field: "kind")
                }
                registration.kind = known
            }
            registration.displayName = input.displayName
            registration.clientSecret = input.clientSecret.flatMap { $0.isEmpty ? nil : $0 }
            registration.scope = input.scopes ?? []
            registration.authorizationEndpoint = input.authorizationEndpoint
            registration.tokenEndpoint = input.tokenEndpoint
            registration.userinfoEndpoint = input.userinfoEndpoint
            if let claims = input.claims {
                for (member, value) in claims {
                    guard !value.isEmpty, !value.hasNUL else {
                        throw AdministrationError("claims.\(member) must name a member.", field: "claims")
                    }
                    switch member {
                    case "subject": registration.claims.subject = value
                    case "email": registration.claims.email = value
                    case "email_verified": registration.claims.emailVerified = value
                    case "name": registration.claims.name = value
                    case "username": registration.claims.username = value
                    default: throw AdministrationError("claims.\(member) is not a claim Latchkey maps.", field: "claims")
                    }
                }
            }
            registration.createsAccounts = input.createsAccounts ?? true
            registration.allowedEmailDomains = input.allowedEmailDomains ?? []
            registration.linksVerifiedEmail = input.linksVerifiedEmail ?? false
            registration.updatesProfile = input.updatesProfile ?? false
            registration.acceptsAssertions = input.acceptsAssertions ?? false
            let provider = try await addIdentityProvider(registration, by: administration.acting(as: caller))
            return AdminAPIResponse(201, providerObject(provider))
        } catch let error as AdministrationError {
            return .invalid(error)
        }
    }

    /// `PATCH /admin/api/providers/{name}`: `enabled` (false ends the sessions signed in through
    /// it) and `accepts_assertions`.
    public func apiUpdateProvider(name: String, _ body: [UInt8], by caller: Client) async throws -> AdminAPIResponse {
        guard try await identityProvider(name: name) != nil else { return .notFound("provider \(name)") }
        do {
            let input = try Self.decode(ProviderUpdate.self, body)
            // The setting that may be refused first, so a refusal changes nothing.
            if let accepts = input.acceptsAssertions {
                try await administration.acting(as: caller).setIdentityProviderAcceptsAssertions(name: name, accepts)
            }
            if let enabled = input.enabled {
                try await administration.acting(as: caller).setIdentityProviderEnabled(name: name, enabled)
            }
        } catch let error as AdministrationError {
            return .invalid(error)
        }
        return try await apiProvider(name: name)
    }

    /// `DELETE /admin/api/providers/{name}`: the provider, its links and its sessions.
    public func apiDeleteProvider(name: String, by caller: Client) async throws -> AdminAPIResponse {
        do {
            try await administration.acting(as: caller).deleteIdentityProvider(name: name)
            return AdminAPIResponse(204, nil)
        } catch let error as AdministrationError {
            return .error(404, "not_found", error.description)
        }
    }

    func providerObject(_ provider: IdentityProvider) -> [String: Any] {
        var object: [String: Any] = [
            "name": provider.name, "display_name": provider.displayName, "kind": provider.kind.rawValue,
            "client_id": provider.clientID, "confidential": provider.sealedClientSecret != nil,
            "scopes": provider.scope.names, "enabled": provider.enabled, "creates_accounts": provider.createsAccounts,
            "allowed_email_domains": provider.allowedEmailDomains, "links_verified_email": provider.linksVerifiedEmail,
            "updates_profile": provider.updatesProfile, "callback": federationCallback(provider.name),
            "accepts_assertions": provider.acceptsAssertions,
            "created_at": Int(provider.createdAt.timeIntervalSince1970),
            "claims": [
                "subject": provider.claims.subject, "email": provider.claims.email,
                "email_verified": provider.claims.emailVerified, "name": provider.claims.name,
                "username": provider.claims.username,
            ],
        ]
        if let issuer = provider.issuer { object["issuer"] = issuer }
        if let url = provider.authorizationEndpoint { object["authorization_endpoint"] = url }
        if let url = provider.tokenEndpoint { object["token_endpoint"] = url }
        if let url = provider.userinfoEndpoint { object["userinfo_endpoint"] = url }
        return object
    }
}

/// `POST /admin/api/providers`.
struct ProviderInput: MemberNamed {
    var name: String?
    var displayName: String?
    var kind: String?
    var issuer: String?
    var clientID: String?
    var clientSecret: String?
    var scopes: [String]?
    var authorizationEndpoint: String?
    var tokenEndpoint: String?
    var userinfoEndpoint: String?
    var claims: [String: String]?
    var createsAccounts: Bool?
    var allowedEmailDomains: [String]?
    var linksVerifiedEmail: Bool?
    var updatesProfile: Bool?
    var acceptsAssertions: Bool?
    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, kind, issuer, scopes, claims
        case displayName = "display_name"
        case clientID = "client_id"
        case clientSecret = "client_secret"
        case authorizationEndpoint = "authorization_endpoint"
        case tokenEndpoint = "token_endpoint"
        case userinfoEndpoint = "userinfo_endpoint"
        case createsAccounts = "creates_accounts"
        case allowedEmailDomains = "allowed_email_domains"
        case linksVerifiedEmail = "links_verified_email"
        case updatesProfile = "updates_profile"
        case acceptsAssertions = "accepts_assertions"
    }
}

/// `PATCH /admin/api/providers/{name}`.
struct ProviderUpdate: MemberNamed {
    var enabled: Bool?
    var acceptsAssertions: Bool?
    enum CodingKeys: String, CodingKey, CaseIterable {
        case enabled
        case acceptsAssertions = "accepts_assertions"
    }
}
