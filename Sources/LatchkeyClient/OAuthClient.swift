import Foundation
import LatchkeyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An OAuth 2.0 client for one provider and one registered app: builds authorization requests,
/// exchanges codes, refreshes tokens. Works against Latchkey and any provider that follows the RFCs.
///
/// ```swift
/// let provider = try await ProviderConfiguration.discover(issuer: "https://auth.example.com")
/// let client = OAuthClient(provider: provider, clientID: "notes-app")
/// let session = client.beginAuthorization(scope: ["profile"], redirectURI: "com.example.notes:/oauth2redirect")
/// let redirect = try await browser.authorize(session.authorizationURL)   // the system browser
/// let tokens = try await client.exchange(redirect: redirect, for: session)
/// ```
public struct OAuthClient: Sendable {
    public let provider: ProviderConfiguration
    public let clientID: String
    public let authentication: ClientAuthentication
    /// When set, every token request carries a DPoP proof made with this key (RFC 9449), so the
    /// tokens are bound to it; ``AuthorizedClient`` then sends proofs with the access token too.
    public let dpop: DPoPKey?
    let session: URLSession
    let idTokens: IDTokenValidator

    public init(
        provider: ProviderConfiguration, clientID: String, authentication: ClientAuthentication = .none,
        urlSession: URLSession = .shared, dpop: DPoPKey? = nil
    ) {
        self.dpop = dpop
        self.provider = provider
        self.clientID = clientID
        self.authentication = authentication
        self.session = urlSession
        self.idTokens = IDTokenValidator(provider: provider, clientID: clientID, session: urlSession)
    }

    /// Starts a sign-in: a fresh `state` and PKCE verifier, and the URL to open.
    /// - Parameters:
    ///   - scope: the scopes to ask for (`scope`); the user may grant fewer.
    ///   - redirectURI: the app's redirect URI; `nil` leaves it out (allowed when one is registered).
    ///   - additionalParameters: provider-specific extras (for example Fitbit's `prompt`).
    ///   - acrValues: `acr_values` (OpenID Connect Core §3.1.2.1, RFC 9470 §4): the authentication
    ///     context classes the sign-in should reach, in order of preference, such as Latchkey's
    ///     `urn:latchkey:acr:2` (a password and a one-time code); empty sends none. A resource's
    ///     ``StepUpChallenge`` names them.
    ///   - maxAge: `max_age` (the same sections): the most seconds since the user last signed in;
    ///     a sign-in older than that is asked for again. `nil` sends none.
    public func beginAuthorization(
        scope: [String], redirectURI: String?, additionalParameters: [(String, String)] = [], acrValues: [String] = [],
        maxAge: Int? = nil
    ) -> AuthorizationSession {
        AuthorizationSession(
            provider: provider, clientID: clientID, redirectURI: redirectURI, scope: ScopeSet(scope),
            extra: additionalParameters + Self.authenticationParameters(acrValues: acrValues, maxAge: maxAge))
    }

    /// `acr_values` (space-separated) and `max_age`, each only when there is one.
    static func authenticationParameters(acrValues: [String], maxAge: Int?) -> [(String, String)] {
        var parameters: [(String, String)] = []
        if !acrValues.isEmpty { parameters.append(("acr_values", acrValues.joined(separator: " "))) }
        if let maxAge { parameters.append(("max_age", String(maxAge))) }
        return parameters
    }

    /// Checks the redirect (state, iss, error) and exchanges its code (RFC 6749 §4.1.3, RFC 7636 §4.5).
    /// - Throws: ``ClientError``.
    public func exchange(redirect: String, for session: AuthorizationSession) async throws -> TokenSet {
        let code = try session.code(fromRedirect: redirect)
        var parameters = [("grant_type", "authorization_code"), ("code", code)]
        if let redirectURI = session.redirectURI { parameters.append(("redirect_uri", redirectURI)) }
        parameters.append(("code_verifier", session.codeVerifier.value))
        var tokens = try await tokenRequest(parameters, requestedScope: session.scope)
        // Asked for openid: an ID token must come, and pass every check, or the sign-in fails.
        if session.nonce != nil || tokens.idToken != nil {
            guard let idToken = tokens.idToken else {
                throw ClientError.invalidIDToken("openid was asked for but the token response has no id_token")
            }
            tokens.identity = try await idTokens.validate(idToken, nonce: session.nonce, accessToken: tokens.accessToken)
        }
        return tokens
    }

    /// Refreshes (RFC 6749 §6), returning the new set; a rotated refresh token replaces the old one,
    /// and a server that does not rotate leaves the old one in place.
    /// - Throws: ``ClientError``: `.server(invalid_grant)` when the refresh token is revoked or expired.
    public func refresh(_ tokens: TokenSet) async throws -> TokenSet {
        guard let refreshToken = tokens.refreshToken else { throw ClientError.noRefreshToken }
        var refreshed = try await tokenRequest(
            [("grant_type", "refresh_token"), ("refresh_token", refreshToken)], requestedScope: tokens.scope)
        if refreshed.refreshToken == nil { refreshed.refreshToken = refreshToken }
        if refreshed.userID == nil { refreshed.userID = tokens.userID }
        if let idToken = refreshed.idToken {
            do {
                refreshed.identity = try await idTokens.validate(
                    idToken, nonce: nil, accessToken: refreshed.accessToken, previous: tokens.identity)
            } catch ClientError.network, ClientError.invalidResponse {
                // The key set could not be fetched: the server has already rotated the refresh
                // token, so losing the new set now would revoke the grant at the next refresh.
                // Keep it, with the identity already verified.
                refreshed.idToken = tokens.idToken
                refreshed.identity = tokens.identity
            }
        } else {
            refreshed.idToken = tokens.idToken
            refreshed.identity = tokens.identity
        }
        return refreshed
    }

    /// A form POST to `url` that authenticates the client as at the token endpoint (RFC 6749 §2.3):
    /// `client_id` in the body for a public client, HTTP Basic for one with a secret, a signed
    /// assertion for one with a key (RFC 7523 §2.2).
    func authenticatedPost(_ url: URL, _ parameters: [(String, String)]) throws -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        var body = parameters
        switch authentication {
        case .none:
            if !body.contains(where: { $0.0 == "client_id" }) { body.append(("client_id", clientID)) }
        case .clientSecretBasic(let secret):
            let credentials = FormParameters.percentEncode(clientID) + ":" + FormParameters.percentEncode(secret)
            request.setValue("Basic " + Data(credentials.utf8).base64EncodedString(), forHTTPHeaderField: "Authorization")
        case .privateKeyJWT(let key, let kid):
            let assertion = try JWTAssertion.clientAssertion(
                key: key, kid: kid, clientID: clientID, audience: provider.issuer ?? provider.tokenEndpoint.absoluteString)
            body += [
                ("client_id", clientID), ("client_assertion_type", JWTAssertion.clientAssertionType),
                ("client_assertion", assertion),
            ]
        }
        request.httpBody = Data(FormParameters(body).encoded.utf8)
        return request
    }

    func tokenRequest(_ parameters: [(String, String)], requestedScope: ScopeSet) async throws -> TokenSet {
        var request = try authenticatedPost(provider.tokenEndpoint, parameters)
        let sentAt = Date()
        if let dpop {
            request.setValue(try await dpop.proof(method: "POST", url: provider.tokenEndpoint), forHTTPHeaderField: "DPoP")
        }
        var (data, response) = try await send(request)
        var object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        if let dpop { await dpop.remember(nonce: Self.header("DPoP-Nonce", in: response), for: provider.tokenEndpoint) }
        // RFC 9449 §8: the server wants a nonce in the proof; make it again with the one it sent, once.
        if let dpop, Self.header("DPoP-Nonce", in: response) != nil,
            object?["error"] as? String == OAuthError.Code.useDPoPNonce.rawValue
        {
            request.setValue(try await dpop.proof(method: "POST", url: provider.tokenEndpoint), forHTTPHeaderField: "DPoP")
            (data, response) = try await send(request)
            object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            await dpop.remember(nonce: Self.header("DPoP-Nonce", in: response), for: provider.tokenEndpoint)
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        if let error = Self.serverError(in: object) { throw error }
        guard status == 200, let object, let accessToken = object["access_token"] as? String else {
            throw ClientError.invalidResponse("the token endpoint answered \(status) without a token")
        }
        let expiresIn = (object["expires_in"] as? NSNumber)?.doubleValue ?? 3600
        // RFC 6749 §5.1: when scope is left out it is what was asked.
        let scope = (object["scope"] as? String).flatMap(ScopeSet.init(parsing:)) ?? requestedScope
        let userID = (object["user_id"] as? String) ?? (object["user_id"] as? NSNumber)?.stringValue
        var tokens = TokenSet(
            accessToken: accessToken, tokenType: object["token_type"] as? String ?? "Bearer",
            refreshToken: object["refresh_token"] as? String, expiresAt: sentAt.addingTimeInterval(expiresIn), scope: scope,
            userID: userID)
        tokens.idToken = object["id_token"] as? String
        return tokens
    }

    /// The RFC 6749 §5.2 error in a JSON answer (`error`, `error_description`), if it holds one.
    static func serverError(in object: [String: Any]?) -> ClientError? {
        guard let error = object?["error"] as? String else { return nil }
        return .server(OAuthError(OAuthError.Code(rawValue: error), object?["error_description"] as? String))
    }

    static func header(_ name: String, in response: URLResponse) -> String? {
        (response as? HTTPURLResponse)?.value(forHTTPHeaderField: name)
    }

    func send(_ request: URLRequest) async throws -> (Data, URLResponse) {
        do { return try await session.data(for: request) } catch { throw ClientError.network(error.localizedDescription) }
    }
}
