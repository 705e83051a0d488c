import Foundation
import LatchkeyCore

/// One sign-in attempt: the authorization URL to open, and the secrets (`state`, `code_verifier`)
/// that only this app knows and that the redirect must match. Use each session once.
public struct AuthorizationSession: Sendable {
    /// The URL to open in the system browser (RFC 6749 §4.1.1, RFC 7636 §4.3); after a push
    /// (RFC 9126) it carries only `client_id` and `request_uri`.
    public internal(set) var authorizationURL: URL
    /// The authorization request's parameters, which a push sends in a request body instead.
    let parameters: [(String, String)]
    /// The `state` sent, checked on the way back (constant-time).
    public let state: String
    /// The PKCE code verifier, sent at the code exchange.
    public let codeVerifier: CodeVerifier
    /// The `redirect_uri` sent, or `nil` when it was left out (then it is left out at the exchange too).
    public let redirectURI: String?
    /// The scopes asked for.
    public let scope: ScopeSet
    /// The OpenID Connect `nonce` sent when `openid` is asked for, checked in the ID token.
    public let nonce: String?
    let provider: ProviderConfiguration

    init(provider: ProviderConfiguration, clientID: String, redirectURI: String?, scope: ScopeSet, extra: [(String, String)]) {
        self.init(
            provider: provider, clientID: clientID, redirectURI: redirectURI, scope: scope, extra: extra,
            state: RandomToken.randomBase64URL(byteCount: 32), codeVerifier: CodeVerifier.generate(),
            nonce: scope.contains("openid") ? RandomToken.randomBase64URL(byteCount: 32) : nil)
    }

    /// A session started earlier and kept elsewhere until its redirect came back: a server that
    /// signs people in through another provider keeps `state`, the verifier and the nonce in its
    /// store between the two requests, and makes the session again to finish it with
    /// ``OAuthClient/exchange(redirect:for:)``.
    /// - Parameters:
    ///   - provider: the provider the session was started with.
    ///   - clientID: the `client_id` it was started with.
    ///   - redirectURI: the `redirect_uri` it sent, if any.
    ///   - scope: the scopes it asked for.
    ///   - state: the `state` it sent.
    ///   - codeVerifier: its PKCE code verifier.
    ///   - nonce: the `nonce` it sent, if any.
    public init(
        resuming provider: ProviderConfiguration, clientID: String, redirectURI: String?, scope: ScopeSet, state: String,
        codeVerifier: CodeVerifier, nonce: String?
    ) {
        self.init(
            provider: provider, clientID: clientID, redirectURI: redirectURI, scope: scope, extra: [], state: state,
            codeVerifier: codeVerifier, nonce: nonce)
    }

    private init(
        provider: ProviderConfiguration, clientID: String, redirectURI: String?, scope: ScopeSet, extra: [(String, String)],
        state: String, codeVerifier: CodeVerifier, nonce: String?
    ) {
        self.provider = provider
        self.state = state
        self.codeVerifier = codeVerifier
        self.redirectURI = redirectURI
        self.scope = scope
        self.nonce = nonce
        var parameters = [("response_type", "code"), ("client_id", clientID)]
        if let redirectURI { parameters.append(("redirect_uri", redirectURI)) }
        if !scope.isEmpty { parameters.append(("scope", scope.description)) }
        parameters += [
            ("state", state), ("code_challenge", codeVerifier.s256Challenge), ("code_challenge_method", CodeChallenge.method),
        ]
        if let nonce { parameters.append(("nonce", nonce)) }
        parameters += extra
        self.parameters = parameters
        self.authorizationURL = Self.authorizationURL(provider, parameters)
    }

    /// The authorization endpoint with `parameters` added to its query.
    static func authorizationURL(_ provider: ProviderConfiguration, _ parameters: [(String, String)]) -> URL {
        let endpoint = provider.authorizationEndpoint.absoluteString
        return URL(string: endpoint + (endpoint.contains("?") ? "&" : "?") + FormParameters(parameters).encoded)!
    }

    /// Reads the redirect the browser was sent to and returns the authorization code.
    ///
    /// Accepts the parameters in the query (or, failing that, the fragment); ignores Fitbit's
    /// trailing `#_=_` and parameters it does not know. Refuses a missing or different `state`,
    /// and an `iss` that is not this provider's (or missing when the provider promises it),
    /// before any error the redirect carries is believed (RFC 9207 §2.4).
    /// - Throws: ``ClientError``: `.server(access_denied…)` when the user or server refused.
    public func code(fromRedirect redirect: String) throws(ClientError) -> String {
        let parameters = Self.parameters(of: redirect)
        guard let returned = parameters["state"], !parameters.isRepeated("state"), ConstantTime.equals(returned, state) else {
            throw .stateMismatch
        }
        if let issuer = provider.issuer {
            if let iss = parameters["iss"] {
                guard iss == issuer else { throw .issuerMismatch }
            } else if provider.issParameterSupported {
                throw .issuerMismatch
            }
        }
        if let error = parameters["error"] {
            throw .server(OAuthError(OAuthError.Code(rawValue: error), parameters["error_description"]))
        }
        guard let code = parameters["code"], !parameters.isRepeated("code") else { throw .missingCode }
        return code
    }

    static func parameters(of redirect: String) -> FormParameters {
        var text = redirect
        if text.hasSuffix("#_=_") { text.removeLast(4) }
        let afterQuery = text.firstIndex(of: "?").map { text[text.index(after: $0)...] }
        let query = afterQuery.map { $0.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0] }
        let fragment = text.firstIndex(of: "#").map { text[text.index(after: $0)...] }
        for candidate in [query, fragment] {
            if let candidate, let parsed = try? FormParameters(decoding: candidate), !parsed.pairs.isEmpty { return parsed }
        }
        return FormParameters([])
    }
}
