import Foundation

extension OAuthClient {
    /// The whole native sign-in with a loopback redirect (RFC 8252 §7.3): listens on
    /// `127.0.0.1`, opens the authorization URL with `userAgent`, waits for the redirect, checks
    /// it and exchanges the code.
    /// - Parameters:
    ///   - scope: the scopes to ask for (`scope`); the user may grant fewer.
    ///   - userAgent: what opens the URL: the system browser, never an embedded web view.
    ///   - port: the loopback port to listen on; 0 takes a free one.
    ///   - path: the redirect URI's path (`http://127.0.0.1:{port}{path}`).
    ///   - timeout: how long to wait for the redirect.
    ///   - additionalParameters: more authorization request parameters, such as `resource`
    ///     (RFC 8707) for each API the token is meant for.
    ///   - acrValues: `acr_values` (RFC 9470 §4): the authentication context classes the sign-in
    ///     should reach, in order of preference, as a ``StepUpChallenge`` names them; empty sends none.
    ///   - maxAge: `max_age` (RFC 9470 §4): the most seconds since the user last signed in; `nil`
    ///     sends none.
    ///   - onAuthorizationURL: called with the URL before the browser opens (to print it for a
    ///     terminal on another machine).
    /// - Throws: ``ClientError``.
    public func signInWithLoopback(
        scope: [String], userAgent: some UserAgent, port: Int = 0, path: String = "/callback",
        timeout: Duration = .seconds(300), additionalParameters: [(String, String)] = [], acrValues: [String] = [],
        maxAge: Int? = nil, onAuthorizationURL: @Sendable (URL) -> Void = { _ in }
    ) async throws -> TokenSet {
        let receiver = try LoopbackRedirectReceiver(port: port, path: path)
        let session = try await startAuthorization(
            scope: scope, redirectURI: receiver.redirectURI, additionalParameters: additionalParameters,
            acrValues: acrValues, maxAge: maxAge)
        onAuthorizationURL(session.authorizationURL)
        try await userAgent.open(session.authorizationURL)
        let redirect = try await receiver.waitForRedirect(timeout: timeout)
        return try await exchange(redirect: redirect, for: session)
    }
}
