import Foundation
import LatchkeyCore

/// One `grant_type` of the token endpoint (RFC 6749 §4, §6). A grant declares its wire name, the
/// kinds of client that may use it and the body parameters it reads; ``GrantRegistry`` dispatches
/// to it after client authentication, once the client is allowed and the required parameters are
/// there, and the metadata's `grant_types_supported` lists it.
///
/// Adding a grant (for example `urn:ietf:params:oauth:grant-type:device_code`, RFC 8628 §3.4) is a
/// new file with a type conforming to this protocol and one line in ``GrantRegistry/standard``.
/// A client may use it when its `grant_types` list holds it (``Client/grantTypes``): a client of a
/// kind it permits is given it when registered, unless ``isGrantedByDefault`` is `false`, and then
/// an administrator or the client's registration adds it. Lists are stored: a grant granted by
/// default that should reach clients registered before it needs a schema step adding it to theirs.
public protocol TokenGrant: Sendable {
    /// The `grant_type` value that selects this grant.
    var grantType: String { get }
    /// The body parameters the grant reads besides `grant_type` and the client's credentials,
    /// in the order their absence is reported.
    var parameters: [GrantParameter] { get }
    /// Whether a client of this type may use the grant; `false` answers `unauthorized_client`
    /// with ``refusal``.
    func permits(_ type: ClientType) -> Bool
    /// The `error_description` for a client the grant does not permit.
    var refusal: String { get }
    /// Whether a client of a kind the grant permits has it unless told otherwise; `false` for a
    /// grant an administrator or a registration turns on per client (`grant_types`).
    var isGrantedByDefault: Bool { get }
    /// Runs the grant for an authenticated, permitted client whose request holds every required
    /// parameter. Throws ``LatchkeyCore/OAuthError`` for the client, any other error for a store failure.
    func issue(_ request: TokenGrantRequest, using services: TokenGrantServices) async throws -> TokenResponse
}

extension TokenGrant {
    public var isGrantedByDefault: Bool { true }
}

/// A body parameter a grant reads.
public struct GrantParameter: Sendable, Equatable {
    public var name: String
    /// Whether the request fails with `invalid_request` when the parameter is absent.
    public var isRequired: Bool

    public static func required(_ name: String) -> GrantParameter { GrantParameter(name: name, isRequired: true) }
    public static func optional(_ name: String) -> GrantParameter { GrantParameter(name: name, isRequired: false) }
}

/// What a grant handler gets: the form body, the authenticated client, and the DPoP key the
/// request proved it holds.
public struct TokenGrantRequest: Sendable {
    public var body: FormParameters
    public var client: Client
    /// The thumbprint of the key of a valid DPoP proof sent with the request (RFC 9449 §5), if any.
    public var keyThumbprint: String?

    /// A parameter the grant declared as required: present, because the registry checked.
    public func required(_ name: String) -> String { body[name] ?? "" }
}

/// What a grant may use: the roles of the store the grants read and write, token issuance, the
/// keys of the providers whose assertions are accepted, and the shared context (configuration,
/// clock, security events).
public struct TokenGrantServices: Sendable, ServerContextual {
    let store: any GrantStore & DeviceAuthorizationStore & ConsentStore & UserStore & FederationStore & AssertionStore
    let issuance: TokenIssuance
    let assertionIssuers: any AssertionIssuerKeys
    let context: ServerContext

}
