import Foundation
import LatchkeyCore

/// Resource indicators (RFC 8707): which registered resources a request's tokens are for.
///
/// A request that names no `resource` works as before: its access token has no audience, so it
/// is good at Latchkey's own endpoints (`/userinfo`) and at a resource server that does not check
/// audiences, and it is refused by one that does (``LatchkeyResource`` always does).
extension TokenIssuance {
    /// The OpenID Connect scopes concern the user's identity at Latchkey, not a resource: a
    /// request that names resources may ask for them besides the resources' own scopes.
    static let identityScopes: Set<String> = ["openid", "profile", "email"]

    /// The most `resource` values one request may carry.
    static let maximumResourceCount = 10

    /// The resources named by the `resource` values of `parameters` (§2): each an absolute URI
    /// without a fragment that names a registered resource, or `invalid_target`.
    func namedResources(_ parameters: FormParameters) async throws -> Result<[ProtectedResource], OAuthError> {
        let values = parameters.all("resource")
        if values.isEmpty { return .success([]) }
        guard values.count <= Self.maximumResourceCount else {
            return .failure(OAuthError(.invalidTarget, "At most \(Self.maximumResourceCount) resource values are accepted."))
        }
        if let malformed = values.first(where: { !ResourceSet.isValidIndicator($0) }) {
            return .failure(
                OAuthError(
                    .invalidTarget, "The resource \(malformed) is not an absolute https URI without a fragment (RFC 8707)."))
        }
        let named = ResourceSet(values)
        let found = try await catalogue.resources(uris: named)
        if let unknown = named.first(where: { uri in !found.contains { $0.uri == uri } }) {
            return .failure(OAuthError(.invalidTarget, "The resource \(unknown) is not registered at this server."))
        }
        return .success(found)
    }

    /// `scope` (RFC 6749 §3.3): required, well-formed, in the catalogue and registered for the client.
    func validateScope(_ parameters: FormParameters, client: Client) async throws -> Result<ScopeSet, OAuthError> {
        guard let scopeText = parameters["scope"] else {
            return .failure(.invalidScope("The scope parameter is required; this application may ask for: \(client.scopes)."))
        }
        guard let scope = ScopeSet(parsing: scopeText) else {
            return .failure(.invalidScope("The scope is malformed: scopes are separated by single spaces."))
        }
        if let error = try await checkAllowed(scope, for: client) { return .failure(error) }
        return .success(scope)
    }

    /// `invalid_scope` when a scope is not in the catalogue or not registered for the client.
    func checkAllowed(_ scope: ScopeSet, for client: Client) async throws -> OAuthError? {
        let known = Set(try await catalogue.scopeCatalogue().map(\.name))
        guard let unknown = scope.first(where: { !known.contains($0) || !client.scopes.contains($0) }) else { return nil }
        return .invalidScope("This application may not ask for the scope \(unknown).")
    }

    /// `invalid_scope` when `scope` holds a scope that none of `resources` accepts (the identity
    /// scopes aside), or none that one of them accepts: a token for a resource must carry at
    /// least one of its scopes. `nil` when it is fine or no resource was named.
    func checkScope(_ scope: ScopeSet, against resources: [ProtectedResource]) -> OAuthError? {
        guard !resources.isEmpty else { return nil }
        let accepted = resources.reduce(into: Set<String>()) { $0.formUnion($1.scopes.names) }
        if let other = scope.first(where: { !accepted.contains($0) && !Self.identityScopes.contains($0) }) {
            return .invalidScope("The scope \(other) is not one the named resource accepts.")
        }
        guard scope.contains(where: accepted.contains) else {
            return .invalidScope("Ask for at least one scope the named resource accepts.")
        }
        return nil
    }

    /// The audience of an access token issued at the token endpoint from a grant that holds
    /// `granted` (§2.2): the `resource` values of the token request, which must be among them, or
    /// all of them when the request names none. Resources deleted since the grant drop out.
    func tokenAudience(_ body: FormParameters, granted: ResourceSet) async throws -> [ProtectedResource] {
        let asked = ResourceSet(body.all("resource"))
        if asked.count > Self.maximumResourceCount {
            throw OAuthError(.invalidTarget, "At most \(Self.maximumResourceCount) resource values are accepted.")
        }
        if let other = asked.first(where: { !granted.contains($0) }) {
            throw OAuthError(.invalidTarget, "The resource \(other) was not part of this authorization.")
        }
        let wanted = asked.isEmpty ? granted : asked
        if wanted.isEmpty { return [] }
        let found = try await catalogue.resources(uris: wanted)
        if found.isEmpty {
            throw OAuthError(.invalidTarget, "The resources of this authorization are no longer registered.")
        }
        return found
    }

    /// The part of `scope` that an access token for `audience` carries: the scopes one of the
    /// resources accepts and the identity scopes (everything when the audience is empty). It
    /// must hold at least one of the resources' own scopes, else `invalid_target`: an identity
    /// scope alone would make a token for the resource that no one consented to use there.
    func scope(_ scope: ScopeSet, for audience: [ProtectedResource]) throws -> ScopeSet {
        guard !audience.isEmpty else { return scope }
        let accepted = audience.reduce(into: Set<String>()) { $0.formUnion($1.scopes.names) }
        guard scope.contains(where: accepted.contains) else {
            throw OAuthError(.invalidTarget, "None of the granted scopes is accepted by the requested resource.")
        }
        return ScopeSet(scope.filter { accepted.contains($0) || Self.identityScopes.contains($0) })
    }
}
