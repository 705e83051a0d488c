import Foundation
import LatchkeyCore

/// The answer to a pushed authorization request (RFC 9126 §2.2), sent with `201 Created`.
public struct PushedAuthorizationResponse: Sendable, Equatable {
    /// `request_uri`: `urn:ietf:params:oauth:request_uri:` and a 256-bit random value.
    public var requestURI: String
    /// `expires_in`: seconds until the `request_uri` stops working.
    public var expiresIn: Int

    /// The JSON body (only base64url characters in the values, so nothing needs escaping).
    public var jsonBody: String {
        #"{"expires_in":\#(expiresIn),"request_uri":"\#(requestURI)"}"#
    }
}

/// `POST /oauth2/par` (RFC 9126) and the `request_uri` values it hands out: stores and takes
/// pushed requests and counts pushes, besides client authentication and the request checks.
public struct PushedAuthorizationEndpoint: Sendable, ServerContextual {
    let clientAuthentication: ClientAuthentication
    let requests: AuthorizationRequestValidator
    let pushedRequests: any PushedRequestStore
    let throttles: any ThrottleStore
    let context: ServerContext

    /// The parameters the authorization endpoint reads, and so all a pushed request keeps
    /// (`client_id` is put in from the authenticated client).
    static let authorizationRequestParameters: Set = [
        "response_type", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method", "nonce", "prompt",
        "max_age", "acr_values", "login_hint", "id_token_hint", "resource", "response_mode", "dpop_jkt",
    ]

    /// The most a pushed request keeps, encoded: enough for any real request (a `state`, a
    /// `nonce`, a few resources), and a bound on what one push stores.
    static let maximumPushedSize = 8_192

    /// The URN prefix of every `request_uri` this server hands out (RFC 9126 §2.2).
    static let requestURIPrefix = "urn:ietf:params:oauth:request_uri:"

    /// `POST /oauth2/par` (RFC 9126 §2): the client authenticates as at the token endpoint
    /// (`client_id` alone for a public client), the request is checked as the authorization
    /// endpoint would check it, and kept for ``ServerConfiguration/pushedRequestLifetime`` under a
    /// single-use `request_uri`. Errors are the token endpoint's JSON (§2.3): a request that would
    /// be refused at the authorization endpoint is refused here, before any browser is involved.
    public func pushAuthorizationRequest(_ request: TokenRequest) async -> Result<
        PushedAuthorizationResponse, TokenEndpointError
    > {
        do {
            return .success(try await handlePush(request))
        } catch {
            return .failure(error)
        }
    }

    private func handlePush(_ request: TokenRequest) async throws(TokenEndpointError) -> PushedAuthorizationResponse {
        let basic = request.authorization != nil
        if let name = request.body.repeatedSingleValuedNames.first {
            throw TokenEndpointError(.invalidRequest("The \(name) parameter was given more than once."))
        }
        // §2.1: a pushed request cannot itself point at another one.
        if request.body["request_uri"] != nil {
            throw TokenEndpointError(.invalidRequest("A pushed request cannot carry a request_uri."))
        }
        if request.body["request"] != nil {
            throw TokenEndpointError(
                OAuthError(.requestNotSupported, "Request objects are not supported; push the parameters themselves."))
        }
        let client = try await clientAuthentication.authenticate(
            request.body, authorization: request.authorization, at: "/oauth2/par")
        // Counted before anything is stored, so a burst cannot slip under the limit (RV19).
        do {
            let window = try await throttles.recordFailure(
                key: ThrottleKey(rawValue: "par:" + client.id.rawValue), at: now, window: 60)
            if window.failures > configuration.pushedRequestsPerClient {
                context.event(.authorizationPushThrottled, ["client_id": "\(client.id)"])
                throw TokenEndpointError(
                    OAuthError(.temporarilyUnavailable, "Too many pushed requests from this client; try again shortly."),
                    usedBasicAuthentication: basic, retryAfter: window.secondsLeft(at: now))
            }
        } catch let error as TokenEndpointError {
            throw error
        } catch {
            throw TokenEndpointError(AuthorizationServer.unavailable, usedBasicAuthentication: basic)
        }
        // The authorization request proper: only the parameters the authorization endpoint reads
        // (RV19: nothing else is stored), the client's id put in (a client that authenticated with
        // HTTP Basic need not repeat it in the body).
        var pairs = request.body.pairs.filter { Self.authorizationRequestParameters.contains($0.name) }
            .map { ($0.name, $0.value) }
        pairs.insert(("client_id", client.id.rawValue), at: 0)
        let parameters = FormParameters(pairs)
        guard parameters.encoded.utf8.count <= Self.maximumPushedSize else {
            throw TokenEndpointError(
                .invalidRequest("A pushed request may hold at most \(Self.maximumPushedSize) bytes of parameters."),
                usedBasicAuthentication: basic)
        }
        let validation: Result<ValidatedAuthorizationRequest, AuthorizationRequestFailure>
        do { validation = try await requests.validateAuthorizationRequest(parameters, pushed: true) } catch {
            throw TokenEndpointError(AuthorizationServer.unavailable, usedBasicAuthentication: basic)
        }
        switch validation {
        case .failure(.page(let error)), .failure(.redirect(let error, _, _, _)):
            throw TokenEndpointError(error, usedBasicAuthentication: basic)
        case .success: break
        }
        let requestURI = Self.requestURIPrefix + RandomToken.generate(.pushedRequest)
        let lifetime = configuration.pushedRequestLifetime
        do {
            try await pushedRequests.insertPushedRequest(
                PushedAuthorizationRequest(
                    requestURIHash: RandomToken.hash(requestURI), clientID: client.id, parameters: parameters.encoded,
                    expiresAt: now.addingTimeInterval(lifetime)))
        } catch {
            context.logger.error("store failure at the pushed authorization request endpoint", metadata: ["error": "\(error)"])
            throw TokenEndpointError(AuthorizationServer.unavailable, usedBasicAuthentication: basic)
        }
        context.event(.authorizationPushed, ["client_id": "\(client.id)"])
        return PushedAuthorizationResponse(requestURI: requestURI, expiresIn: Int(lifetime.rounded(.up)))
    }

    /// The parameters of the authorization request that `request_uri` stands for (RFC 9126 §4),
    /// taken from the store once: the pushed ones alone, whatever else the browser's URL carries
    /// (RFC 9101 §5), and only for the client that pushed them.
    /// - Returns: `nil` when the request carries no `request_uri` of this server's; any other
    ///   `request_uri` (a request object by reference) is left for the authorization endpoint to
    ///   refuse as `request_uri_not_supported`, without fetching anything.
    /// - Throws: ``OAuthError`` `invalid_request_uri`, for an error page: the redirect URI is not
    ///   known yet.
    func pushedParameters(_ parameters: FormParameters) async throws -> FormParameters? {
        guard let requestURI = parameters["request_uri"], requestURI.hasPrefix(Self.requestURIPrefix) else { return nil }
        guard !parameters.isRepeated("request_uri"), !parameters.isRepeated("client_id") else {
            throw OAuthError.invalidRequest("The request_uri or client_id parameter was given more than once.")
        }
        guard let clientID = parameters["client_id"] else {
            throw OAuthError.invalidRequest("The client_id parameter is missing.")
        }
        guard
            let pushed = try await pushedRequests.takePushedRequest(
                hash: RandomToken.hash(requestURI), clientID: ClientID(rawValue: clientID)),
            pushed.expiresAt > now,
            let stored = try? FormParameters(decoding: pushed.parameters)
        else {
            context.event(.authorizationRequestUriRefused, ["client_id": "\(clientID)"])
            throw Self.unusableRequestURI
        }
        return stored
    }

    static let unusableRequestURI = OAuthError(
        OAuthError.Code(rawValue: "invalid_request_uri"),
        "This request_uri is unknown, expired, already used or was pushed by another app. Go back to the app and start again."
    )
}
