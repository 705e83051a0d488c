import Foundation
import LatchkeyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where an authorization server's endpoints are: discovered (RFC 8414) or given.
public struct ProviderConfiguration: Sendable, Equatable, Codable {
    /// The issuer identifier, checked against `iss` in redirects; `nil` if the provider has none.
    public var issuer: String?
    public var authorizationEndpoint: URL
    public var tokenEndpoint: URL
    public var userinfoEndpoint: URL?
    public var revocationEndpoint: URL?
    /// Whether every authorization response carries `iss` (RFC 9207 §3); then a missing one is refused.
    public var issParameterSupported: Bool

    public init(
        issuer: String? = nil, authorizationEndpoint: URL, tokenEndpoint: URL, userinfoEndpoint: URL? = nil,
        revocationEndpoint: URL? = nil, issParameterSupported: Bool = false
    ) {
        self.issuer = issuer
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.userinfoEndpoint = userinfoEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.issParameterSupported = issParameterSupported
    }

    /// Fitbit's Web API endpoints, from the Fitbit authorization guide.
    public static let fitbit = ProviderConfiguration(
        authorizationEndpoint: URL(string: "https://www.fitbit.com/oauth2/authorize")!,
        tokenEndpoint: URL(string: "https://api.fitbit.com/oauth2/token")!,
        revocationEndpoint: URL(string: "https://api.fitbit.com/oauth2/revoke")!)

    /// Reads `{issuer}/.well-known/oauth-authorization-server` (RFC 8414 §3) and checks that the
    /// document names the same issuer (§3.3).
    /// - Throws: ``ClientError``.
    public static func discover(issuer: String, session: URLSession = .shared) async throws -> ProviderConfiguration {
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        guard let url = URL(string: trimmed + "/.well-known/oauth-authorization-server") else {
            throw ClientError.invalidResponse("\(issuer) is not a URL")
        }
        let data: Data
        let response: URLResponse
        do { (data, response) = try await session.data(from: url) } catch {
            throw ClientError.network("\(error.localizedDescription)")
        }
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
            throw ClientError.network("\(url) answered \((response as? HTTPURLResponse)?.statusCode ?? 0)")
        }
        let metadata: AuthorizationServerMetadata
        do { metadata = try JSONDecoder().decode(AuthorizationServerMetadata.self, from: data) } catch {
            throw ClientError.invalidResponse("the metadata document is not RFC 8414 JSON")
        }
        guard metadata.issuer == trimmed else { throw ClientError.issuerMismatch }
        guard metadata.codeChallengeMethodsSupported.contains(CodeChallenge.method) else {
            throw ClientError.invalidResponse("the server does not support PKCE S256")
        }
        guard let authorize = URL(string: metadata.authorizationEndpoint), let token = URL(string: metadata.tokenEndpoint)
        else { throw ClientError.invalidResponse("the metadata has malformed endpoints") }
        return ProviderConfiguration(
            issuer: metadata.issuer, authorizationEndpoint: authorize, tokenEndpoint: token,
            userinfoEndpoint: metadata.userinfoEndpoint.flatMap(URL.init(string:)),
            revocationEndpoint: metadata.revocationEndpoint.flatMap(URL.init(string:)),
            issParameterSupported: metadata.authorizationResponseIssParameterSupported)
    }
}

/// How the client identifies itself at the token endpoint (RFC 6749 §2.3).
public enum ClientAuthentication: Sendable, Equatable {
    /// A public client (native app): `client_id` in the body, no secret.
    case none
    /// A confidential client: HTTP Basic with the form-encoded id and secret (§2.3.1).
    case clientSecretBasic(secret: String)
}
