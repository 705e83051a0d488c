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
}

/// How an authorization request failed: on a page when the redirect URI cannot be trusted
/// (RFC 6749 §4.1.2.1: "MUST NOT automatically redirect"), else back to the client.
public enum AuthorizationRequestFailure: Error, Sendable {
    case page(OAuthError)
    case redirect(OAuthError, redirectURI: String, state: String?)
}

extension AuthorizationServer {
    /// Checks an authorization request in the order that keeps errors away from unvalidated
    /// redirect URIs: client, then redirect URI, then everything else (SECURITY.md T25).
    public func validateAuthorizationRequest(_ parameters: FormParameters) async throws
        -> Result<ValidatedAuthorizationRequest, AuthorizationRequestFailure>
    {
        for name in ["client_id", "redirect_uri"] where parameters.isRepeated(name) {
            return .failure(.page(.invalidRequest("The \(name) parameter was given more than once.")))
        }
        guard let clientID = parameters["client_id"] else {
            return .failure(.page(.invalidRequest("The client_id parameter is missing.")))
        }
        guard let client = try await store.client(id: clientID) else {
            return .failure(.page(.invalidRequest("The client_id does not name a registered application.")))
        }
        let redirectURIParameter = parameters["redirect_uri"]
        let redirectURI: String
        if let redirectURIParameter {
            guard client.redirectURIs.contains(where: { RedirectURI.matches(requested: redirectURIParameter, registered: $0) })
            else {
                return .failure(.page(.invalidRequest("The redirect_uri is not registered for this application.")))
            }
            redirectURI = redirectURIParameter
        } else {
            guard client.redirectURIs.count == 1 else {
                return .failure(.page(.invalidRequest(
                    "The redirect_uri parameter is required: this application has \(client.redirectURIs.count == 0 ? "no" : "several") registered.")))
            }
            redirectURI = client.redirectURIs[0]
        }

        // From here on the redirect URI is trusted: errors go back to the client (§4.1.2.1).
        let repeated = parameters.repeatedNames
        let state = repeated.contains("state") ? nil : parameters["state"]
        func fail(_ error: OAuthError) -> Result<ValidatedAuthorizationRequest, AuthorizationRequestFailure> {
            .failure(.redirect(error, redirectURI: redirectURI, state: state))
        }
        if let name = repeated.first {
            return fail(.invalidRequest("The \(name) parameter was given more than once."))
        }
        guard let responseType = parameters["response_type"] else {
            return fail(.invalidRequest("The response_type parameter is missing."))
        }
        guard responseType == "code" else {
            return fail(OAuthError(.unsupportedResponseType, "Only response_type=code is supported for this client."))
        }
        if client.type == .service {
            return fail(OAuthError(.unauthorizedClient, "A service client uses the client_credentials grant only."))
        }

        // PKCE (RFC 7636 §4.3, §4.4.1; RFC 9700 §2.1.1: S256 only).
        let challenge = parameters["code_challenge"]
        let method = parameters["code_challenge_method"]
        if challenge == nil, method != nil {
            return fail(.invalidRequest("code_challenge_method was given without a code_challenge."))
        }
        var codeChallenge: CodeChallenge?
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

        // Scope (RFC 6749 §3.3).
        guard let scopeText = parameters["scope"] else {
            return fail(.invalidScope("The scope parameter is required; this application may ask for: \(client.scopes)."))
        }
        guard let scope = ScopeSet(parsing: scopeText) else {
            return fail(.invalidScope("The scope is malformed: scopes are separated by single spaces."))
        }
        let catalogue = Set(try await store.scopeCatalogue().map(\.name))
        if let unknown = scope.first(where: { !catalogue.contains($0) || !client.scopes.contains($0) }) {
            return fail(.invalidScope("This application may not ask for the scope \(unknown)."))
        }
        return .success(
            ValidatedAuthorizationRequest(
                client: client, redirectURI: redirectURI, redirectURIParameter: redirectURIParameter, scope: scope,
                state: state, codeChallenge: codeChallenge?.value))
    }

    /// The URL that carries `parameters`, `state` and `iss` (RFC 9207) back to the client.
    public func authorizationResponseURL(redirectURI: String, _ parameters: [(String, String)], state: String?) -> String {
        var all = parameters
        if let state { all.append(("state", state)) }
        all.append(("iss", issuer))
        return RedirectURI.appending(all, to: redirectURI)
    }
}
