import Foundation
import LatchkeyCore

/// An authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3) that passed every check.
public struct ValidatedAuthorizationRequest: Sendable {
    public var client: Client
    public var redirectURI: String
    public var redirectURIParameter: String?
    public var scope: ScopeSet
    public var state: String?
    public var codeChallenge: String?
    public var responseType: ResponseType
    /// `nonce`, `prompt`, `max_age`, `login_hint`, `id_token_hint`.
    public var openID: OpenIDRequestParameters
    /// The registered resources the `resource` parameters name (RFC 8707), or none.
    public var resources: [ProtectedResource]
    /// `dpop_jkt` (RFC 9449 §10): the DPoP key's JWK thumbprint the code is to be bound to.
    public var dpopJKT: String? = nil
    /// `response_mode`, when the request named one.
    public var responseMode: ResponseMode? = nil
}

/// How an authorization request failed: on a page when the redirect URI cannot be trusted
/// (RFC 6749 §4.1.2.1: "MUST NOT automatically redirect"), else back to the client.
public enum AuthorizationRequestFailure: Error, Sendable {
    case page(OAuthError)
    /// In the response mode the request asked for, when it may be used, else the response
    /// type's default (the fragment for the implicit grant, RFC 6749 §4.2.2.1).
    case redirect(OAuthError, redirectURI: String, state: String?, mode: ResponseMode)
}

/// Checks authorization requests for the authorization endpoint and PAR (RFC 6749 §4.1.1,
/// RFC 7636 §4.3, RFC 9126, OpenID Connect Core §3.1.2.1). It reads clients (fetching metadata
/// documents), the scope and resource catalogues and the signing keys (`id_token_hint`), and
/// stores nothing but what a client's metadata document registers.
public struct AuthorizationRequestValidator: Sendable, ServerContextual {
    let documents: ClientMetadataDocuments
    let issuance: TokenIssuance
    let signingKeys: SigningKeyring
    let context: ServerContext

    /// Checks an authorization request in the order that keeps errors away from unvalidated
    /// redirect URIs: client, then redirect URI, then everything else (docs/threat-model.md T25).
    /// - Parameter pushed: whether the parameters were pushed (RFC 9126); if not, and the client
    ///   or the server requires pushing, the request is refused.
    public func validateAuthorizationRequest(_ parameters: FormParameters, pushed: Bool = false) async throws
        -> Result<ValidatedAuthorizationRequest, AuthorizationRequestFailure>
    {
        for name in ["client_id", "redirect_uri"] where parameters.isRepeated(name) {
            return .failure(.page(.invalidRequest("The \(name) parameter was given more than once.")))
        }
        guard let clientID = parameters["client_id"] else {
            return .failure(.page(.invalidRequest("The client_id parameter is missing.")))
        }
        let known: Client?
        do {
            known = try await documents.client(forAuthorizationRequest: clientID)
        } catch let error as OAuthError {
            return .failure(.page(error))
        }
        guard let client = known else {
            return .failure(.page(.invalidRequest("The client_id does not name a registered application.")))
        }
        let redirectURIParameter = parameters["redirect_uri"]
        let redirectURI: String
        if let redirectURIParameter {
            // A native app's localhost registration takes any port, as its loopback literals do.
            let localhostAnyPort = client.type == .native && configuration.acceptsLocalhostRedirects
            guard
                client.redirectURIs.contains(where: {
                    RedirectURI.matches(requested: redirectURIParameter, registered: $0, localhostAnyPort: localhostAnyPort)
                })
            else {
                return .failure(.page(.invalidRequest("The redirect_uri is not registered for this application.")))
            }
            redirectURI = redirectURIParameter
        } else {
            guard client.redirectURIs.count == 1 else {
                return .failure(
                    .page(
                        .invalidRequest(
                            "The redirect_uri parameter is required: this application has \(client.redirectURIs.count == 0 ? "no" : "several") registered."
                        )))
            }
            redirectURI = client.redirectURIs[0]
        }

        // From here on the redirect URI is trusted: errors go back to the client (§4.1.2.1).
        let repeated = parameters.repeatedSingleValuedNames
        let state = repeated.contains("state") ? nil : parameters["state"]
        // Errors go in the fragment once the request is known to be implicit (RFC 6749 §4.2.2.1).
        let responseType = repeated.contains("response_type") ? nil : parameters["response_type"].flatMap(ResponseType.init)
        let modeText = repeated.contains("response_mode") ? nil : parameters["response_mode"]
        let responseMode = modeText.flatMap(ResponseMode.init(rawValue:))
        // Errors go back as the request asked, unless it asked for a token in the query.
        var errorMode = ResponseMode.defaultMode(for: responseType ?? .code)
        if let responseMode, !(responseType == .token && responseMode == .query) { errorMode = responseMode }
        func fail(_ error: OAuthError) -> Result<ValidatedAuthorizationRequest, AuthorizationRequestFailure> {
            .failure(.redirect(error, redirectURI: redirectURI, state: state, mode: errorMode))
        }
        if let name = repeated.first {
            return fail(.invalidRequest("The \(name) parameter was given more than once."))
        }
        if !pushed, mustPush(client) {
            return fail(
                .invalidRequest(
                    "This application must push its authorization requests first (RFC 9126): POST them to /oauth2/par."))
        }
        if state?.hasNUL == true {
            // Stored with the pending request, a NUL would be cut (SQLite) or refused (PostgreSQL).
            return fail(.invalidRequest("The state parameter holds a NUL character."))
        }
        guard let responseTypeText = parameters["response_type"] else {
            return fail(.invalidRequest("The response_type parameter is missing."))
        }
        guard let responseType else {
            return fail(OAuthError(.unsupportedResponseType, "The response_type \(responseTypeText) is not supported; use code."))
        }
        if client.type == .service {
            return fail(OAuthError(.unauthorizedClient, "A service client uses the client_credentials grant only."))
        }
        if modeText != nil, responseMode == nil {
            return fail(.invalidRequest("The response_mode must be query, fragment or form_post."))
        }
        var codeChallenge: CodeChallenge?
        switch responseType {
        case .token:
            guard client.type == .browser, client.allowImplicit else {
                return fail(
                    OAuthError(
                        .unauthorizedClient, "This client may not use the implicit grant; use response_type=code with PKCE."))
            }
            // Tokens never travel in the query ("Multiple Response Type Encoding Practices" §3.0).
            if responseMode == .query {
                return fail(.invalidRequest("The implicit grant answers in the fragment or by form_post, never in the query."))
            }
        case .code:
            // PKCE (RFC 7636 §4.3, §4.4.1; RFC 9700 §2.1.1: S256 only).
            let challenge = parameters["code_challenge"]
            let method = parameters["code_challenge_method"]
            if challenge == nil, method != nil {
                return fail(.invalidRequest("code_challenge_method was given without a code_challenge."))
            }
            if let challenge {
                guard method == CodeChallenge.method else {
                    return fail(.invalidRequest("The code_challenge_method must be S256; plain is not supported."))
                }
                guard let parsed = CodeChallenge(challenge) else {
                    return fail(.invalidRequest("The code_challenge must be 43 base64url characters (S256)."))
                }
                codeChallenge = parsed
            } else if !client.type.isConfidential || configuration.requirePKCEForConfidentialClients {
                return fail(.invalidRequest("A code_challenge with code_challenge_method=S256 is required (PKCE, RFC 7636)."))
            } else if state == nil {
                return fail(.invalidRequest("The state parameter is required when PKCE is not used."))
            }
        }

        let scope: ScopeSet
        switch try await issuance.validateScope(parameters, client: client) {
        case .failure(let error): return fail(error)
        case .success(let value): scope = value
        }
        let resources: [ProtectedResource]
        switch try await issuance.namedResources(parameters) {
        case .failure(let error): return fail(error)
        case .success(let named): resources = named
        }
        if responseType == .token, !resources.isEmpty {
            return fail(
                OAuthError(.invalidTarget, "The implicit grant does not take a resource; use response_type=code with PKCE."))
        }
        if let error = issuance.checkScope(scope, against: resources) { return fail(error) }
        // dpop_jkt (RFC 9449 §10): a JWK SHA-256 thumbprint, 43 base64url characters.
        let dpopJKT = parameters["dpop_jkt"]
        if let dpopJKT {
            guard responseType == .code, dpopJKT.utf8.count == 43, Base64URL.decode(dpopJKT)?.count == 32 else {
                return fail(
                    .invalidRequest(
                        "dpop_jkt must be the 43-character SHA-256 JWK thumbprint of a DPoP key, with response_type=code."))
            }
        }
        switch try await openIDParameters(parameters, client: client) {
        case .failure(let error): return fail(error)
        case .success(let openID):
            return .success(
                ValidatedAuthorizationRequest(
                    client: client, redirectURI: redirectURI, redirectURIParameter: redirectURIParameter, scope: scope,
                    state: state, codeChallenge: codeChallenge?.value, responseType: responseType, openID: openID,
                    resources: resources, dpopJKT: dpopJKT, responseMode: responseMode))
        }
    }

    /// Whether `client` must push its authorization requests: the server requires it of every
    /// client, or the client's registration does (RFC 9126 §5, §6).
    func mustPush(_ client: Client) -> Bool {
        configuration.requirePushedAuthorizationRequests || client.requirePushedAuthorizationRequests
    }

    /// The answer that carries `parameters`, `state` and `iss` (RFC 9207) back to the client: a
    /// redirect with them in the query or the fragment, or, for `form_post`, a page whose form the
    /// browser posts to the redirect URI.
    public func authorizationResponse(
        redirectURI: String, _ parameters: [(String, String)], state: String?, mode: ResponseMode
    ) -> AuthorizationStep {
        guard mode == .formPost else {
            return .redirect(
                authorizationResponseURL(redirectURI: redirectURI, parameters, state: state, inFragment: mode == .fragment))
        }
        var all = parameters
        if let state { all.append(("state", state)) }
        all.append(("iss", context.issuer))
        return .formPost(
            FormPostResponse(action: redirectURI, fields: all.map { FormPostResponse.Field(name: $0.0, value: $0.1) }))
    }

    /// The URL that carries `parameters`, `state` and `iss` (RFC 9207) back to the client, in the
    /// query, or in the fragment for the implicit grant.
    public func authorizationResponseURL(
        redirectURI: String, _ parameters: [(String, String)], state: String?, inFragment: Bool = false
    ) -> String {
        var all = parameters
        if let state { all.append(("state", state)) }
        all.append(("iss", context.issuer))
        return RedirectURI.appending(all, to: redirectURI, inFragment: inFragment)
    }
}
