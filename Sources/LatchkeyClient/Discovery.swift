import Foundation
import LatchkeyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A provider's metadata document as the client reads it: every member the client does not
/// strictly need is optional (RFC 8414 §2 makes most OPTIONAL, and servers leave them out).
struct ProviderMetadataDocument: Decodable {
    var issuer: String
    var authorizationEndpoint: String
    var tokenEndpoint: String
    var userinfoEndpoint: String?
    var revocationEndpoint: String?
    var jwksURI: String?
    var codeChallengeMethodsSupported: [String]?
    var authorizationResponseIssParameterSupported: Bool?
    var idTokenSigningAlgValuesSupported: [String]?
    var pushedAuthorizationRequestEndpoint: String?
    var requirePushedAuthorizationRequests: Bool?
    var deviceAuthorizationEndpoint: String?

    enum CodingKeys: String, CodingKey {
        case issuer
        case authorizationEndpoint = "authorization_endpoint"
        case tokenEndpoint = "token_endpoint"
        case userinfoEndpoint = "userinfo_endpoint"
        case revocationEndpoint = "revocation_endpoint"
        case jwksURI = "jwks_uri"
        case codeChallengeMethodsSupported = "code_challenge_methods_supported"
        case authorizationResponseIssParameterSupported = "authorization_response_iss_parameter_supported"
        case idTokenSigningAlgValuesSupported = "id_token_signing_alg_values_supported"
        case pushedAuthorizationRequestEndpoint = "pushed_authorization_request_endpoint"
        case requirePushedAuthorizationRequests = "require_pushed_authorization_requests"
        case deviceAuthorizationEndpoint = "device_authorization_endpoint"
    }
}

extension ProviderConfiguration {
    /// Discovers a provider from its issuer: the RFC 8414 document
    /// (`/.well-known/oauth-authorization-server`, inserted before the issuer's path, §3), or when
    /// there is none the OpenID Connect one (`{issuer}/.well-known/openid-configuration`,
    /// Discovery §4), and checks that the document names exactly this issuer (RFC 8414 §3.3,
    /// Discovery §4.3). Members the document leaves out are taken as unsupported, except
    /// `code_challenge_methods_supported`: many servers that accept PKCE do not list it, so PKCE is
    /// sent anyway, and only a list without `S256` is refused.
    /// - Throws: ``ClientError``.
    public static func discover(issuer: String, session: URLSession = .shared) async throws -> ProviderConfiguration {
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme, components.host != nil,
            ["https", "http"].contains(scheme)
        else { throw ClientError.invalidResponse("\(issuer) is not an http(s) URL") }
        var failures: [String] = []
        for url in wellKnownURLs(issuer: trimmed, components: components) {
            let data: Data
            let response: URLResponse
            do { (data, response) = try await session.data(from: url) } catch {
                throw ClientError.network("\(error.localizedDescription)")
            }
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            guard status == 200 else {
                failures.append("\(url) answered \(status)")
                continue
            }
            let document: ProviderMetadataDocument
            do { document = try JSONDecoder().decode(ProviderMetadataDocument.self, from: data) } catch {
                throw ClientError.invalidResponse(
                    "\(url) is not a metadata document: it needs at least issuer, authorization_endpoint and token_endpoint")
            }
            // Discovery §4.3: the issuer exactly as given, a trailing slash included.
            return try configuration(from: document, issuer: issuer)
        }
        throw ClientError.network(failures.joined(separator: "; "))
    }

    /// RFC 8414's address first, then OpenID Connect's.
    static func wellKnownURLs(issuer: String, components: URLComponents) -> [URL] {
        var rfc8414 = components
        let path = components.path == "/" ? "" : components.path
        rfc8414.path = "/.well-known/oauth-authorization-server" + path
        return [rfc8414.url, URL(string: issuer + "/.well-known/openid-configuration")].compactMap { $0 }
    }

    static func configuration(from document: ProviderMetadataDocument, issuer: String) throws -> ProviderConfiguration {
        guard document.issuer == issuer else { throw ClientError.issuerMismatch }
        if let methods = document.codeChallengeMethodsSupported, !methods.contains(CodeChallenge.method) {
            throw ClientError.invalidResponse("the server does not support PKCE S256")
        }
        guard let authorize = URL(string: document.authorizationEndpoint), let token = URL(string: document.tokenEndpoint)
        else { throw ClientError.invalidResponse("the metadata has malformed endpoints") }
        var configuration = ProviderConfiguration(
            issuer: document.issuer, authorizationEndpoint: authorize, tokenEndpoint: token,
            userinfoEndpoint: document.userinfoEndpoint.flatMap(URL.init(string:)),
            revocationEndpoint: document.revocationEndpoint.flatMap(URL.init(string:)),
            issParameterSupported: document.authorizationResponseIssParameterSupported ?? false,
            jwksURI: document.jwksURI.flatMap(URL.init(string:)),
            idTokenSigningAlgorithms: document.idTokenSigningAlgValuesSupported)
        configuration.pushedAuthorizationRequestEndpoint = document.pushedAuthorizationRequestEndpoint.flatMap(
            URL.init(string:))
        configuration.deviceAuthorizationEndpoint = document.deviceAuthorizationEndpoint.flatMap(URL.init(string:))
        return configuration
    }
}
