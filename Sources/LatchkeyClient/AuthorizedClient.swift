import Foundation
import LatchkeyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends requests with the user's access token: refreshes it shortly before it expires and once
/// on a 401, keeps the rotated refresh token in the store, and lets concurrent callers share one
/// refresh so a rotating server never sees the same refresh token twice.
public actor AuthorizedClient {
    public let client: OAuthClient
    let store: any TokenStore
    let key: String
    /// Refresh when the access token has less than this left.
    let margin: TimeInterval
    private var tokens: TokenSet?
    private var refreshing: Task<TokenSet, any Error>?

    /// - Parameters:
    ///   - client: the client that refreshes the tokens.
    ///   - store: where the tokens are kept; every refresh writes the new ones there.
    ///   - key: where the tokens live in `store` (for example the issuer and client id).
    ///   - tokens: the tokens to start with; `nil` reads them from `store`.
    ///   - refreshMargin: refresh when the access token has less than this many seconds left.
    public init(
        client: OAuthClient, store: any TokenStore, key: String, tokens: TokenSet? = nil, refreshMargin: TimeInterval = 60
    ) {
        self.client = client
        self.store = store
        self.key = key
        self.tokens = tokens
        self.margin = refreshMargin
    }

    /// A valid access token, refreshed if it is about to expire.
    /// - Throws: ``ClientError``: `requiresSignIn` when nothing is stored or the refresh token is dead.
    public func accessToken(forceRefresh: Bool = false) async throws -> TokenSet {
        let current = try await currentTokens()
        if !forceRefresh, !current.isExpiring(within: margin) { return current }
        return try await refresh(from: current)
    }

    /// Sends `request` with `Authorization: Bearer`, or for a DPoP-bound token `Authorization:
    /// DPoP` and a fresh proof (RFC 9449 §7); on a 401 refreshes once and retries (after a
    /// `use_dpop_nonce` challenge, first retries with the nonce).
    ///
    /// A 401 with an RFC 9470 step-up challenge (`error="insufficient_user_authentication"`) is
    /// not retried, since a refreshed token keeps the same sign-in; it is thrown, for the app to
    /// send the user through a new authorization with the challenge's `acr_values` and `max_age`.
    /// - Throws: ``ClientError``: `insufficientUserAuthentication` with the challenge;
    ///   `requiresSignIn` ones when the tokens are gone.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let first = try await accessToken()
        let (data, response) = try await perform(request, with: first)
        guard response.statusCode == 401 else { return (data, response) }
        try Self.throwStepUp(response)
        let renewed = try await refresh(from: first)
        let (retriedData, retried) = try await perform(request, with: renewed)
        if retried.statusCode == 401 { try Self.throwStepUp(retried) }
        return (retriedData, retried)
    }

    /// Throws ``ClientError/insufficientUserAuthentication(_:)`` when a 401 carries a step-up challenge.
    private static func throwStepUp(_ response: HTTPURLResponse) throws {
        if let header = response.value(forHTTPHeaderField: "WWW-Authenticate"),
            let challenge = StepUpChallenge(wwwAuthenticate: header)
        {
            throw ClientError.insufficientUserAuthentication(challenge)
        }
    }

    private func perform(_ request: URLRequest, with tokens: TokenSet) async throws -> (Data, HTTPURLResponse) {
        let key = tokens.tokenType.caseInsensitiveCompare("DPoP") == .orderedSame ? client.dpop : nil
        var (data, response) = try await client.send(try await Self.authorized(request, tokens, key))
        if let key, let url = request.url, (response as? HTTPURLResponse)?.statusCode == 401,
            OAuthClient.header("WWW-Authenticate", in: response)?.contains("use_dpop_nonce") == true,
            let nonce = OAuthClient.header("DPoP-Nonce", in: response)
        {
            await key.remember(nonce: nonce, for: url)
            (data, response) = try await client.send(try await Self.authorized(request, tokens, key))
        }
        guard let http = response as? HTTPURLResponse else { throw ClientError.invalidResponse("not HTTP") }
        return (data, http)
    }

    /// `request` with the access token, and for a DPoP-bound token a fresh proof.
    private static func authorized(_ request: URLRequest, _ tokens: TokenSet, _ key: DPoPKey?) async throws -> URLRequest {
        var request = request
        guard let key, let url = request.url else {
            request.setValue("Bearer \(tokens.accessToken)", forHTTPHeaderField: "Authorization")
            return request
        }
        request.setValue("DPoP \(tokens.accessToken)", forHTTPHeaderField: "Authorization")
        let proof = try await key.proof(method: request.httpMethod ?? "GET", url: url, accessToken: tokens.accessToken)
        request.setValue(proof, forHTTPHeaderField: "DPoP")
        return request
    }

    private func currentTokens() async throws -> TokenSet {
        if let tokens { return tokens }
        guard let stored = try await store.load(key: key) else { throw ClientError.noRefreshToken }
        tokens = stored
        return stored
    }

    /// One refresh at a time: callers that arrive while one runs wait for it. A caller whose
    /// token was already replaced gets the replacement without another request.
    private func refresh(from stale: TokenSet) async throws -> TokenSet {
        if let refreshing { return try await refreshing.value }
        if let tokens, tokens.accessToken != stale.accessToken, !tokens.isExpiring(within: margin) { return tokens }
        let task = Task { [client] in try await client.refresh(stale) }
        refreshing = task
        defer { refreshing = nil }
        let fresh = try await task.value
        tokens = fresh
        try await store.save(fresh, key: key)
        return fresh
    }
}
