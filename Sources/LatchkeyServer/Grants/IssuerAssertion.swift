import Foundation
import LatchkeyCore

/// Where the keys of a provider whose assertions are accepted come from: ``UpstreamClients``,
/// which reads them from the provider's discovery document's `jwks_uri`.
public protocol AssertionIssuerKeys: Sendable {
    /// The provider's key set; with `missing`, the `kid` an assertion names, a kept set that
    /// lacks it may be read again.
    func keySet(of provider: IdentityProvider, missing kid: String?, now: Date) async -> Result<
        AssertionKeySet, JWTAssertion.Rejection
    >
}

/// An assertion from an upstream provider presented as a grant (RFC 7523 §2.1, §3), checked up
/// to what needs this server's state: the issuer is an enabled provider whose assertions are
/// accepted, the signature its, the claims right for an identity assertion grant or a plain one.
struct IssuerAssertion {
    /// The provider's name here.
    var provider: String
    var issuer: String
    /// `sub`: who the person is at the provider.
    var subject: String
    var jti: String
    var expiresAt: Date
    var isIdentityAssertion: Bool
    /// `resource` (draft-ietf-oauth-identity-assertion-authz-grant §3.1), when the assertion names any.
    var resources: [String]?
    /// `scope`, when the assertion has one.
    var scope: ScopeSet?
    var authTime: Date?
    /// `email`, when the assertion says its issuer verified it (`email_verified`).
    var verifiedEmail: String?
    /// Whether the provider is trusted with verified addresses (`--link-verified-email`).
    var linksVerifiedEmail: Bool

    /// Checks `assertion`, presented by `client` with a DPoP proof by `proofKey`, if any.
    /// - Throws: `invalid_grant` with the reason (the client has authenticated).
    static func verify(_ assertion: String, for client: Client, proofKey: String?, using services: TokenGrantServices)
        async throws -> IssuerAssertion
    {
        let issuerHere = services.context.issuer
        func refuse(_ reason: String, _ provider: String = "-") -> OAuthError {
            services.event(
                .assertionGrantRefused, ["client_id": "\(client.id)", "identity_provider": "\(provider)", "reason": "\(reason)"])
            return OAuthError.invalidGrant(reason)
        }
        guard let unverified = JWTAssertion.unverified(assertion), let issuer = unverified.issuer else {
            throw refuse("The assertion is not a signed JWT with an iss.")
        }
        // Never this server's own tokens (draft §9.3: an identity assertion crosses trust domains).
        guard issuer != issuerHere,
            let provider = try await services.store.identityProviders().first(where: {
                $0.enabled && $0.acceptsAssertions && $0.kind == .openIDConnect && $0.issuer == issuer
            })
        else { throw refuse("The assertion's issuer is not one whose assertions this server accepts.") }

        let keys: AssertionKeySet
        switch await services.assertionIssuers.keySet(of: provider, missing: unverified.kid, now: services.now) {
        case .failure(let problem):
            services.event(.clientKeysRefused, ["identity_provider": "\(provider.name)", "reason": "\(problem.description)"])
            throw refuse("The keys of \(provider.displayName) could not be read; try again later.", provider.name)
        case .success(let set): keys = set
        }
        let verified: JWTAssertion
        do {
            verified = try JWTAssertion(
                verifying: assertion, keys: keys, audiences: [issuerHere, issuerHere + "/oauth2/token"], now: services.now,
                maximumLifetime: JWTBearerGrant.maximumLifetime)
        } catch {
            throw refuse(error.description, provider.name)
        }
        guard let claims = try? JSONSerialization.jsonObject(with: verified.claims) as? [String: Any] else {
            throw refuse("The assertion's claims are not a JSON object.", provider.name)
        }
        let type = verified.type?.lowercased()
        let isIdentityAssertion = type == JWTBearerGrant.identityAssertionType
        guard isIdentityAssertion || type == nil || type == "jwt" else {
            throw refuse("An assertion's typ must be \(JWTBearerGrant.identityAssertionType), JWT, or left out.", provider.name)
        }
        // The client the assertion was made for: `client_id`, or for a plain assertion `azp`. One
        // without any could be any token the provider signed for this server (an access token
        // with this audience), and would be good to whichever allowed client showed it first.
        let clientID = claims["client_id"] as? String ?? (isIdentityAssertion ? nil : claims["azp"] as? String)
        guard let clientID else {
            throw refuse("The assertion must name the client it was made for (client_id).", provider.name)
        }
        if isIdentityAssertion {
            // §4.4.1: aud this server's issuer identifier alone (audience injection), and the
            // client the IdP meant.
            guard verified.audiences == [issuerHere] else {
                throw refuse("An identity assertion's aud must be this server's issuer identifier alone.", provider.name)
            }
            guard claims["iat"] != nil else { throw refuse("An identity assertion needs iat.", provider.name) }
        } else if verified.audiences.contains(provider.clientID) {
            // An ID token the provider issued to this server for a sign-in is no grant.
            throw refuse(
                "The assertion is addressed to this server's client at the provider: an ID token is no grant.", provider.name)
        }
        if clientID != client.id.rawValue {
            throw refuse("The assertion was issued for another client.", provider.name)
        }
        if let confirmation = claims["cnf"] {
            guard let jkt = (confirmation as? [String: Any])?["jkt"] as? String, jkt == proofKey else {
                throw refuse("The assertion is bound to a DPoP key (cnf.jkt): send a DPoP proof made with it.", provider.name)
            }
        }

        var resources: [String]?
        switch claims["resource"] {
        case nil: resources = nil
        case let one as String: resources = [one]
        case let many as [Any] where many.allSatisfy({ $0 is String }) && !many.isEmpty:
            resources = many.compactMap { $0 as? String }
        default: throw refuse("The assertion's resource must be a URI or a list of them.", provider.name)
        }
        var scope: ScopeSet?
        if let value = claims["scope"] {
            guard let text = value as? String, let parsed = ScopeSet(parsing: text) else {
                throw refuse("The assertion's scope must be space-separated scope names.", provider.name)
            }
            scope = parsed
        }
        let authTime = (claims["auth_time"] as? NSNumber).map { Date(timeIntervalSince1970: $0.doubleValue) }
        let email = (claims["email_verified"] as? Bool) == true ? claims["email"] as? String : nil
        return IssuerAssertion(
            provider: provider.name, issuer: issuer, subject: verified.subject, jti: verified.jti,
            expiresAt: verified.expiresAt, isIdentityAssertion: isIdentityAssertion, resources: resources, scope: scope,
            authTime: authTime, verifiedEmail: email, linksVerifiedEmail: provider.linksVerifiedEmail)
    }

    static func noAccount(_ provider: String) -> OAuthError {
        OAuthError.invalidGrant("No account here is linked to this user of \(provider), or it is disabled.")
    }

    /// The account the assertion is about: the one linked to its `sub` at the provider; else,
    /// when the provider is trusted with verified addresses, the one enabled account with the
    /// confirmed address it verified, with the link to make (``link(_:using:)``, once the
    /// assertion is accepted). Never a new one, nor a disabled one.
    func account(using services: TokenGrantServices) async throws -> (user: User, newLink: FederatedIdentity?) {
        let store = services.store
        if let link = try await store.federatedIdentity(provider: provider, subject: subject) {
            guard let user = try await store.user(id: link.userID), user.disabledAt == nil else {
                throw Self.noAccount(provider)
            }
            return (user, nil)
        }
        guard linksVerifiedEmail, let email = verifiedEmail else { throw Self.noAccount(provider) }
        let confirmed = try await store.users(email: email).filter { $0.emailVerified && $0.disabledAt == nil }
        guard confirmed.count == 1 else { throw Self.noAccount(provider) }
        let link = FederatedIdentity(
            provider: provider, subject: subject, userID: confirmed[0].id, email: Federation.usableEmail(email),
            createdAt: services.now)
        return (confirmed[0], link)
    }

    /// Makes `link` (`federation.linked` by `assertion`). Of two at once, one is made; the other
    /// goes on only if the link made names the same account.
    func link(_ link: FederatedIdentity, using services: TokenGrantServices) async throws {
        if try await services.store.insertFederatedIdentity(link) {
            services.event(
                .federationLinked, ["user_id": "\(link.userID)", "identity_provider": "\(provider)", "by": "assertion"])
        } else if try await services.store.federatedIdentity(provider: provider, subject: subject)?.userID != link.userID {
            throw Self.noAccount(provider)
        }
    }
}
