import Foundation
import LatchkeyCore

/// Client authentication at the token, PAR, device-authorization, revocation and introspection
/// endpoints (RFC 6749 §2.3). It reads clients and counts failed secrets, and touches nothing else.
struct ClientAuthentication: Sendable, ServerContextual {
    let clients: any ClientStore
    let throttles: any ThrottleStore
    let context: ServerContext
    /// Whether clients known by their metadata documents may still be used (see
    /// ``ServerConfiguration/allowsUse(of:documentsAccepted:)``): a policy other than off, and a
    /// fetcher to use.
    let documentsAccepted: Bool

    /// Identifies the client of a token request (RFC 6749 §2.3, §3.2.1): HTTP Basic or
    /// `client_secret_post` for confidential clients, `client_id` alone for public ones, never two
    /// methods at once (docs/threat-model.md T38, T39).
    func authenticate(_ body: FormParameters, authorization: String?) async throws(TokenEndpointError) -> Client {
        let basic = authorization != nil
        func failure(_ error: OAuthError) -> TokenEndpointError {
            TokenEndpointError(error, usedBasicAuthentication: basic)
        }
        if body["client_assertion"] != nil || body["client_assertion_type"] != nil {
            throw failure(.invalidRequest("client_assertion is not supported: use HTTP Basic or client_secret_post."))
        }
        let bodyID = body["client_id"]
        let bodySecret = body["client_secret"]
        if let authorization {
            guard bodySecret == nil else {
                throw failure(.invalidRequest("Use one client authentication method: HTTP Basic or client_secret, not both."))
            }
            guard let (id, secret) = Self.parseBasic(authorization) else {
                throw failure(.invalidClient("The Authorization header is not valid HTTP Basic credentials."))
            }
            if let bodyID, bodyID != id {
                throw failure(.invalidRequest("The client_id in the body differs from the authenticated client."))
            }
            return try await confidentialClient(id: id, secret: secret, basic: true)
        }
        guard let bodyID else {
            throw failure(
                .invalidClient("Client authentication is required: send client_id (public clients) or HTTP Basic credentials."))
        }
        if let bodySecret {
            return try await confidentialClient(id: bodyID, secret: bodySecret, basic: false)
        }
        let client: Client?
        do { client = try await clients.client(id: ClientID(rawValue: bodyID)) } catch {
            throw failure(AuthorizationServer.unavailable)
        }
        guard let client, configuration.allowsUse(of: client, documentsAccepted: documentsAccepted) else {
            throw failure(.invalidClient("Client authentication failed."))
        }
        guard !client.type.isConfidential else {
            throw failure(.invalidClient("This client is confidential: authenticate with its secret (HTTP Basic)."))
        }
        return client
    }

    /// Checks a client secret. Failures are counted per client id in the store; over
    /// ``ServerConfiguration/clientAuthenticationAttempts`` in a window the client is refused with
    /// 429 until the window ends, even with the right secret (docs/threat-model.md T41).
    private func confidentialClient(id: String, secret: String, basic: Bool) async throws(TokenEndpointError) -> Client {
        let unavailable = TokenEndpointError(AuthorizationServer.unavailable, usedBasicAuthentication: basic)
        // Unknown ids are counted too, or a 429 would tell which ids exist; they share 65,536
        // buckets (by hash), so made-up ids cannot grow the table without bound.
        let knownKey = "client:" + id
        let unknownKey = "client?" + RandomToken.hash(id).prefix(4)
        let (client, window): (Client?, ThrottleWindow?)
        do {
            (client, window) = try await throttles.clientAndFailures(
                id: ClientID(rawValue: id), knownKey: ThrottleKey(rawValue: knownKey),
                unknownKey: ThrottleKey(rawValue: unknownKey), at: now)
        } catch { throw unavailable }
        let throttleKey = client != nil ? knownKey : unknownKey
        if let window, window.failures >= configuration.clientAuthenticationAttempts {
            context.event(.clientAuthenticationThrottled, ["client_id": "\(id)"])
            throw TokenEndpointError(
                OAuthError(.temporarilyUnavailable, "Too many failed authentications for this client; try again later."),
                usedBasicAuthentication: basic,
                retryAfter: window.secondsLeft(at: now))
        }
        // Compare against a dummy hash for unknown or public clients, so timing and answer are the same.
        let expected = client?.secretHash ?? Self.noSecretHash
        let matches = ConstantTime.equals(RandomToken.hash(secret), expected)
        guard matches, let client, client.secretHash != nil else {
            do {
                _ = try await throttles.recordFailure(
                    key: ThrottleKey(rawValue: throttleKey), at: now, window: configuration.clientAuthenticationWindow)
            } catch { throw unavailable }
            context.event(.clientAuthenticationFailed, ["client_id": "\(id)", "client_known": "\(client != nil)"])
            throw TokenEndpointError(.invalidClient("Client authentication failed."), usedBasicAuthentication: basic)
        }
        return client
    }

    /// The shared start of the revocation and introspection endpoints: no repeated parameter, an
    /// authenticated client, and the `token` parameter.
    func clientAndToken(_ request: TokenRequest) async throws(TokenEndpointError) -> (Client, String) {
        if let name = request.body.repeatedNames.first {
            throw TokenEndpointError(.invalidRequest("The \(name) parameter was given more than once."))
        }
        let client = try await authenticate(request.body, authorization: request.authorization)
        guard let token = request.body["token"] else {
            throw TokenEndpointError(.invalidRequest("The token parameter is missing."))
        }
        return (client, token)
    }

    /// Decodes `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1, Appendix B).
    static func parseBasic(_ header: String) -> (String, String)? {
        guard let credentials = HeaderText.credentials(header, scheme: "Basic"),
            let data = Data(base64Encoded: String(credentials)),
            let decoded = String(validating: data, as: UTF8.self),
            let colon = decoded.firstIndex(of: ":"),
            let id = try? FormParameters.percentDecodeComponent(decoded[..<colon]),
            let secret = try? FormParameters.percentDecodeComponent(decoded[decoded.index(after: colon)...]),
            !id.isEmpty
        else { return nil }
        return (id, secret)
    }

    static let noSecretHash = String(repeating: "0", count: 64)
}

extension AuthorizationServer {
    /// The answer when the store fails: `temporarily_unavailable` (503), never a credential error.
    static let unavailable = OAuthError(.temporarilyUnavailable, "The server cannot reach its store; try again shortly.")
}
