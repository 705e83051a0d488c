import Foundation

/// OAuth 2.0 Protected Resource Metadata (RFC 9728 §2): what a client reads, after a `401`, to
/// find where to get a token for this resource.
public struct ProtectedResourceMetadata: Sendable, Codable, Equatable {
    /// `resource`: the resource's identifier, the same as the URL the document was fetched for (§3.3).
    public var resource: String
    /// `authorization_servers`: the issuers that can issue tokens for it.
    public var authorizationServers: [String]
    /// `scopes_supported`.
    public var scopesSupported: [String]?
    /// `bearer_methods_supported`: only the `Authorization` header (RFC 6750 §2.1).
    public var bearerMethodsSupported: [String]
    /// `resource_name`.
    public var resourceName: String?

    public init(_ configuration: ResourceServerConfiguration) {
        resource = configuration.resource
        authorizationServers = [configuration.issuer]
        scopesSupported = configuration.scopesSupported.isEmpty ? nil : configuration.scopesSupported
        bearerMethodsSupported = ["header"]
        resourceName = configuration.resourceName
    }

    enum CodingKeys: String, CodingKey {
        case resource
        case authorizationServers = "authorization_servers"
        case scopesSupported = "scopes_supported"
        case bearerMethodsSupported = "bearer_methods_supported"
        case resourceName = "resource_name"
    }

    /// The document as JSON.
    public var jsonBody: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
