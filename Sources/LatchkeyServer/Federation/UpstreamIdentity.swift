import Foundation
import LatchkeyClient
import LatchkeyCore

/// Who signed in at an upstream provider, from its ID token (checked by `LatchkeyClient`, OpenID
/// Connect Core §3.1.3.7) or its userinfo answer, through the provider's ``ClaimMapping``.
struct UpstreamIdentity: Sendable, Equatable {
    /// The stable identifier there (`sub`).
    var subject: String
    var email: String?
    /// Whether the provider says it checked ``email``; a provider that does not say never vouches.
    var emailVerified: Bool
    var name: String?
    var username: String?

    /// The identity the code exchange's `tokens` show. An OpenID provider's comes from the ID
    /// token, topped up from its userinfo endpoint when the ID token leaves out the address, and
    /// only if that answer is about the same `sub` (Core §5.3.2); a plain OAuth 2.0 provider's
    /// comes from its userinfo endpoint alone.
    static func of(
        _ tokens: TokenSet, provider: IdentityProvider, userinfoEndpoint endpoint: URL?, upstream: UpstreamClients
    ) async throws -> UpstreamIdentity {
        switch provider.kind {
        case .openIDConnect:
            guard let verified = tokens.identity else { throw FederationFailure.upstream("it sent no ID token.") }
            var identity = UpstreamIdentity(
                subject: verified.subject, email: verified.email, emailVerified: verified.emailVerified ?? false,
                name: verified.name, username: verified.preferredUsername)
            if identity.email == nil || identity.name == nil, let endpoint {
                let info = try await upstream.userInfo(at: endpoint, accessToken: tokens.accessToken)
                guard let other = UpstreamIdentity(info, claims: ClaimMapping()), other.subject == verified.subject else {
                    throw FederationFailure.upstream("its userinfo answer is about another user than its ID token.")
                }
                if identity.email == nil {
                    identity.email = other.email
                    identity.emailVerified = other.emailVerified
                }
                identity.name = identity.name ?? other.name
                identity.username = identity.username ?? other.username
            }
            return identity
        case .oauth2:
            guard let endpoint else { throw FederationFailure.misconfigured("it has no userinfo endpoint") }
            let info = try await upstream.userInfo(at: endpoint, accessToken: tokens.accessToken)
            guard let identity = UpstreamIdentity(info, claims: provider.claims) else {
                throw FederationFailure.upstream("its userinfo answer has no \(provider.claims.subject).")
            }
            return identity
        }
    }

    /// Reads a userinfo object through `claims`; `nil` without a subject. A subject may be a
    /// number (GitHub's `id`); `email_verified` counts only as a JSON `true` (or the text "true").
    init?(_ object: [String: Any], claims: ClaimMapping) {
        guard let subject = Self.text(object[claims.subject]), !subject.isEmpty, subject.count <= 255 else { return nil }
        self.subject = subject
        email = Self.text(object[claims.email]).flatMap { $0.isEmpty ? nil : $0 }
        let verified = object[claims.emailVerified]
        emailVerified = (verified as? Bool) == true || (verified as? String) == "true"
        name = Self.text(object[claims.name])
        username = Self.text(object[claims.username])
    }

    init(subject: String, email: String?, emailVerified: Bool, name: String?, username: String?) {
        self.subject = subject
        self.email = email
        self.emailVerified = emailVerified
        self.name = name
        self.username = username
    }

    /// A string member, or a whole number written as one.
    private static func text(_ value: Any?) -> String? {
        if let string = value as? String { return string }
        if let number = value as? NSNumber, !(value is Bool), number.doubleValue == number.doubleValue.rounded() {
            return String(number.int64Value)
        }
        return nil
    }

    /// The domain of ``email``, lower-cased.
    var emailDomain: String? {
        guard let email, let at = email.lastIndex(of: "@") else { return nil }
        return email[email.index(after: at)...].lowercased()
    }
}
