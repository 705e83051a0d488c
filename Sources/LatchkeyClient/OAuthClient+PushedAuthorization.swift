import Foundation
import LatchkeyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension OAuthClient {
    /// Starts a sign-in as ``beginAuthorization(scope:redirectURI:additionalParameters:acrValues:maxAge:)``
    /// does, and when the provider has a pushed authorization request endpoint (RFC 9126), pushes
    /// the request there first: the URL to open then carries only `client_id` and `request_uri`, so
    /// the request's parameters (`acr_values` and `max_age` among them) cannot be read or changed
    /// in the browser.
    /// - Parameters:
    ///   - scope: the scopes to ask for.
    ///   - redirectURI: where the browser comes back, one of the client's registered redirect URIs.
    ///   - additionalParameters: more authorization request parameters, sent as they are.
    ///   - acrValues: `acr_values` (RFC 9470 §4): the authentication context classes the sign-in
    ///     should reach, in order of preference; empty sends none.
    ///   - maxAge: `max_age` (RFC 9470 §4): the most seconds since the user last signed in; `nil`
    ///     sends none.
    /// - Throws: ``ClientError``.
    public func startAuthorization(
        scope: [String], redirectURI: String?, additionalParameters: [(String, String)] = [], acrValues: [String] = [],
        maxAge: Int? = nil
    ) async throws -> AuthorizationSession {
        let session = beginAuthorization(
            scope: scope, redirectURI: redirectURI, additionalParameters: additionalParameters, acrValues: acrValues,
            maxAge: maxAge)
        guard provider.pushedAuthorizationRequestEndpoint != nil else { return session }
        return try await push(session)
    }

    /// Pushes a session's authorization request (RFC 9126 §2) and returns the session with the
    /// short URL that names it.
    /// - Throws: ``ClientError``: `.server(…)` with the endpoint's error, such as `invalid_request`.
    public func push(_ session: AuthorizationSession) async throws -> AuthorizationSession {
        guard let endpoint = provider.pushedAuthorizationRequestEndpoint else {
            throw ClientError.invalidResponse("the provider has no pushed_authorization_request_endpoint")
        }
        let (data, response) = try await send(try authenticatedPost(endpoint, session.parameters))
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        if let error = Self.serverError(in: object) { throw error }
        // §2.2: 201 with request_uri and expires_in.
        guard status == 201 || status == 200, let requestURI = object?["request_uri"] as? String, !requestURI.isEmpty
        else {
            throw ClientError.invalidResponse(
                "the pushed authorization request endpoint answered \(status) without a request_uri")
        }
        var pushed = session
        pushed.authorizationURL = AuthorizationSession.authorizationURL(
            provider, [("client_id", clientID), ("request_uri", requestURI)])
        return pushed
    }
}
