import Foundation
import LatchkeyCore
import Logging

/// Client authentication at the token, PAR, device-authorization, revocation and introspection
/// endpoints (RFC 6749 §2.3, RFC 7523 §2.2). It reads clients and their key sets, counts failed
/// authentications and records the assertions used, and touches nothing else.
struct ClientAuthentication: Sendable, ServerContextual {
    let clients: any ClientStore
    let throttles: any ThrottleStore
    let assertions: any AssertionStore
    let keySets: ClientKeySets
    let context: ServerContext
    /// Whether clients known by their metadata documents may still be used (see
    /// ``ServerConfiguration/allowsUse(of:documentsAccepted:)``): a policy other than off, and a
    /// fetcher to use.
    let documentsAccepted: Bool

    /// Identifies the client of a token request (RFC 6749 §2.3, §3.2.1): HTTP Basic or
    /// `client_secret_post` for clients with a secret, a signed assertion for clients with keys
    /// (`private_key_jwt`), `client_id` alone for public ones, never two methods at once
    /// (docs/threat-model.md T38, T39).
    /// - Parameter endpoint: the path of the endpoint the request came to, which decides what a
    ///   client assertion's `aud` may name (``assertionAudiences(at:)``).
    func authenticate(_ body: FormParameters, authorization: String?, at endpoint: String) async throws(TokenEndpointError)
        -> Client
    {
        let basic = authorization != nil
        func failure(_ error: OAuthError) -> TokenEndpointError {
            TokenEndpointError(error, usedBasicAuthentication: basic)
        }
        let bodyID = body["client_id"]
        let bodySecret = body["client_secret"]
        if body["client_assertion"] != nil || body["client_assertion_type"] != nil {
            guard authorization == nil, bodySecret == nil else {
                throw failure(
                    .invalidRequest("Use one client authentication method: a client assertion or a secret, not both."))
            }
            guard body["client_assertion_type"] == JWTAssertion.clientAssertionType, let assertion = body["client_assertion"]
            else {
                throw failure(
                    .invalidRequest(
                        "A client assertion needs client_assertion and client_assertion_type \(JWTAssertion.clientAssertionType)."
                    ))
            }
            return try await assertedClient(assertion, bodyID: bodyID, audiences: assertionAudiences(at: endpoint))
        }
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
            throw failure(
                .invalidClient(
                    client.keys == nil
                        ? "This client is confidential: authenticate with its secret (HTTP Basic)."
                        : "This client authenticates with a signed client assertion (private_key_jwt)."))
        }
        return client
    }

    /// Checks a client secret. Failures are counted per client id in the store; over
    /// ``ServerConfiguration/clientAuthenticationAttempts`` in a window the client is refused with
    /// 429 until the window ends, even with the right secret (docs/threat-model.md T41).
    private func confidentialClient(id: String, secret: String, basic: Bool) async throws(TokenEndpointError) -> Client {
        let (client, throttleKey) = try await throttledClient(id: id, basic: basic)
        // Compare against a dummy hash for unknown or public clients, so timing and answer are the same.
        let expected = client?.secretHash ?? Self.noSecretHash
        let matches = ConstantTime.equals(RandomToken.hash(secret), expected)
        guard matches, let client, client.secretHash != nil else {
            try await failed(throttleKey, id: id, known: client != nil, basic: basic)
        }
        return client
    }

    /// What a client assertion's `aud` may name at `endpoint`: this server's issuer identifier
    /// everywhere (draft-ietf-oauth-rfc7523bis); at the token endpoint its URL too (RFC 7523 §3),
    /// and at PAR the token endpoint's and its own (RFC 9126 §2). An endpoint's URL is accepted
    /// nowhere else, so an assertion a client made for another server's endpoint that only claims
    /// one of these URLs is good at no more than that one endpoint (docs/threat-model.md CA2).
    func assertionAudiences(at endpoint: String) -> Set<String> {
        switch endpoint {
        case "/oauth2/token": [context.issuer, context.issuer + endpoint]
        case "/oauth2/par": [context.issuer, context.issuer + "/oauth2/token", context.issuer + endpoint]
        default: [context.issuer]
        }
    }

    /// Checks a client assertion (RFC 7523 §2.2, §3): signed by one of the client's registered
    /// keys, `iss` and `sub` its id, `aud` one of `audiences`, `exp` at most an hour ahead, and a
    /// `jti` never seen before at any instance (docs/threat-model.md CA1–CA7). Failures are counted
    /// as failed secrets are; until the signature has verified they all read "Client authentication
    /// failed.", whatever the reason (which goes to the log), so the answer tells a stranger
    /// nothing of which clients have keys.
    private func assertedClient(_ assertion: String, bodyID: String?, audiences: Set<String>) async throws(TokenEndpointError)
        -> Client
    {
        guard let unverified = JWTAssertion.unverified(assertion), let id = unverified.subject, !id.isEmpty else {
            // Nothing names a client to count the failure against; the answer is the same as any other.
            throw TokenEndpointError(.invalidClient("Client authentication failed."))
        }
        if let bodyID, bodyID != id {
            throw TokenEndpointError(.invalidRequest("The client_id in the body differs from the client assertion's sub."))
        }
        let (client, throttleKey) = try await throttledClient(id: id, basic: false)
        guard let client, let keys = client.keys else {
            try await failed(throttleKey, id: id, known: client != nil, basic: false)
        }
        let now = self.now
        let verified: Result<JWTAssertion, JWTAssertion.Rejection>
        switch await keySets.keySet(keys, missing: unverified.kid, now: now) {
        case .failure(let problem):
            // Why stays in the log, as for metadata documents (RV22): the answer must make this
            // server neither a probe of other hosts nor a directory of clients with keys.
            context.event(.clientKeysRefused, ["client_id": "\(id)", "reason": "\(problem.description)"])
            throw TokenEndpointError(.invalidClient("Client authentication failed."))
        case .success(let keySet):
            verified = Result { () throws(JWTAssertion.Rejection) in
                try JWTAssertion(verifying: assertion, keys: keySet, audiences: audiences, now: now)
            }
        }
        let asserted: JWTAssertion
        switch verified {
        case .failure(let problem):
            try await failed(
                throttleKey, id: id, known: true, basic: false,
                description: problem.signatureVerified ? problem.description : "Client authentication failed.",
                reason: problem.signatureVerified ? nil : problem.description)
        case .success(let value):
            asserted = value
        }
        guard asserted.issuer == client.id.rawValue else {
            try await failed(
                throttleKey, id: id, known: true, basic: false,
                description: "A client assertion's iss and sub must both be the client's id.")
        }
        // Kept until the assertion could no longer be accepted, leeway included.
        let fresh: Bool
        do {
            fresh = try await assertions.recordAssertion(
                hash: RandomToken.hash("client \(client.id)\n\(asserted.jti)"),
                expiresAt: asserted.expiresAt.addingTimeInterval(60))
        } catch { throw TokenEndpointError(AuthorizationServer.unavailable) }
        guard fresh else {
            context.event(.clientAssertionReplayed, ["client_id": "\(id)"])
            try await failed(
                throttleKey, id: id, known: true, basic: false,
                description: "This client assertion was used before: make a new one, with a new jti, for each request.")
        }
        return client
    }

    /// The client with this id (`nil` when there is none, or it may not be used) and the throttle
    /// key its failures count under, or 429 when too many failed lately.
    private func throttledClient(id: String, basic: Bool) async throws(TokenEndpointError) -> (Client?, String) {
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
        if let window, window.failures >= configuration.clientAuthenticationAttempts {
            context.event(.clientAuthenticationThrottled, ["client_id": "\(id)"])
            throw TokenEndpointError(
                OAuthError(.temporarilyUnavailable, "Too many failed authentications for this client; try again later."),
                usedBasicAuthentication: basic,
                retryAfter: window.secondsLeft(at: now))
        }
        let usable = client.map { configuration.allowsUse(of: $0, documentsAccepted: documentsAccepted) } ?? false
        return (usable ? client : nil, client != nil ? knownKey : unknownKey)
    }

    /// Counts a failed authentication and refuses it with `invalid_client`; `reason`, when given,
    /// goes to the log only.
    private func failed(
        _ throttleKey: String, id: String, known: Bool, basic: Bool, description: String = "Client authentication failed.",
        reason: String? = nil
    ) async throws(TokenEndpointError) -> Never {
        do {
            _ = try await throttles.recordFailure(
                key: ThrottleKey(rawValue: throttleKey), at: now, window: configuration.clientAuthenticationWindow)
        } catch { throw TokenEndpointError(AuthorizationServer.unavailable, usedBasicAuthentication: basic) }
        var details: Logger.Metadata = ["client_id": "\(id)", "client_known": "\(known)"]
        if let reason { details["reason"] = "\(reason)" }
        context.event(.clientAuthenticationFailed, details)
        throw TokenEndpointError(.invalidClient(description), usedBasicAuthentication: basic)
    }

    /// The shared start of the revocation and introspection endpoints: no repeated parameter, an
    /// authenticated client, and the `token` parameter.
    func clientAndToken(_ request: TokenRequest, at endpoint: String) async throws(TokenEndpointError) -> (Client, String) {
        if let name = request.body.repeatedNames.first {
            throw TokenEndpointError(.invalidRequest("The \(name) parameter was given more than once."))
        }
        let client = try await authenticate(request.body, authorization: request.authorization, at: endpoint)
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
